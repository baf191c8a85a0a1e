/**
 * What the console keeps for a person between pages, in memory (as the platform's client does
 * on screen): the notes only they see (an app's answer to their command, the offline message),
 * and the stack of views (modals) apps opened for them. Lost on restart, like a closed window.
 */
const NOTES_PER_CHANNEL = 20;
const MAX_PEOPLE = 1000;

export interface Note {
  id: string;
  channelId: string;
  /** In a thread (a command typed in its composer). */
  rootId?: string;
  /** Who the note is from (the app's name). */
  from: string;
  text: string;
  atMilli: number;
}

export interface OpenView {
  appId: string;
  channelId: string;
  /** The page to come back to once the stack is empty. */
  returnTo: string;
  view: Record<string, unknown>;
}

export function createPersonState(now: () => number = Date.now) {
  const notes = new Map<string, Note[]>();
  const views = new Map<string, OpenView[]>();
  let seq = 0;
  /** Forget the oldest person's state beyond the bound (a long-running daemon, many people). */
  const bounded = <T>(m: Map<string, T>, key: string, value: T) => {
    m.delete(key);
    m.set(key, value);
    if (m.size > MAX_PEOPLE) m.delete(m.keys().next().value as string);
  };

  return {
    addNote(userId: string, n: Omit<Note, 'id' | 'atMilli'>): void {
      const list = (notes.get(userId) ?? []).concat({ ...n, id: `note-${(seq++).toString(36)}`, atMilli: now() });
      const inChannel = list.filter((x) => x.channelId === n.channelId);
      const drop = new Set(inChannel.slice(0, Math.max(0, inChannel.length - NOTES_PER_CHANNEL)));
      bounded(notes, userId, list.filter((x) => !drop.has(x)));
    },
    notes: (userId: string, channelId: string, rootId?: string): Note[] => (notes.get(userId) ?? []).filter((n) => n.channelId === channelId && n.rootId === rootId),
    /** The view on top of the person's stack, if any. */
    top: (userId: string): OpenView | undefined => views.get(userId)?.at(-1),
    /**
     * Follow an app's answer `{view, action}`: OPEN starts a new stack, PUSH adds on top,
     * UPDATE replaces the view with the same id (else the top), CLOSE closes the top.
     */
    apply(userId: string, answer: unknown, ctx: Omit<OpenView, 'view'>): boolean {
      const a = answer && typeof answer === 'object' ? (answer as Record<string, unknown>) : {};
      const view = a.view && typeof a.view === 'object' ? { ...(a.view as Record<string, unknown>) } : undefined;
      const action = String(a.action ?? (view ? 'OPEN' : '')).toUpperCase();
      const stack = views.get(userId) ?? [];
      if (action === 'CLOSE') {
        stack.pop();
        bounded(views, userId, stack);
        return true;
      }
      if (!view) return false;
      view.id ??= `view-${(seq++).toString(36)}`;
      const open: OpenView = { ...(stack.at(-1) ?? ctx), view };
      if (action === 'PUSH') stack.push({ ...open, view: { ...view, parentViewId: stack.at(-1)?.view.id } });
      else if (action === 'UPDATE' && stack.length) {
        const i = stack.findIndex((s) => s.view.id === view.id);
        stack[i >= 0 ? i : stack.length - 1] = open;
      } else stack.splice(0, stack.length, { ...ctx, view });
      bounded(views, userId, stack);
      return true;
    },
    /**
     * What the person sees of an app's answer to something they did: its message as a note, its
     * view as the modal on top (or, `closeOnAck`, an acknowledged submit closes the top view).
     * Returns the page to go to.
     */
    follow(userId: string, rec: { appName: string; state: string; ephemeralMessage?: string; response?: unknown; appId: string }, from: string, ctx: { channelId: string; returnTo: string; rootId?: string }, closeOnAck = false): string {
      if (rec.ephemeralMessage) this.addNote(userId, { channelId: ctx.channelId, ...(ctx.rootId ? { rootId: ctx.rootId } : {}), from, text: rec.ephemeralMessage });
      const shown = rec.state === 'delivered' && this.apply(userId, rec.response, { appId: rec.appId, channelId: ctx.channelId, returnTo: ctx.returnTo });
      if (!shown && closeOnAck && rec.state === 'delivered') this.close(userId);
      return this.top(userId)?.returnTo ?? ctx.returnTo;
    },
    /** Close the top view (Close, or a submit the app acknowledged without a view); the page to go back to. */
    close(userId: string): string | undefined {
      const stack = views.get(userId) ?? [];
      const gone = stack.pop();
      return gone?.returnTo;
    },
  };
}

export type PersonState = ReturnType<typeof createPersonState>;
