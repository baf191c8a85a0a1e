/**
 * What the console keeps for a person between pages (as the platform's client does on screen):
 * the notes only they see (an app's answer to their command, the offline message), the stack
 * of views (modals) apps opened for them, what they last chose in an element of a message or a
 * view (ticked boxes, a date: the next tick sends every box ticked, so the page must show them),
 * and what they typed in an app's home view. One record per workspace user in the store, not in
 * this process: the person's next page may be served by another daemon behind the balancer.
 * A change is a transaction on the record: run again when another page of the same person wrote
 * in between.
 */
import crypto from 'node:crypto';
import type { Store } from '../store/types.js';
import type { Choice, Note, OpenView, PersonRecord } from '../model/workspace.js';
import type { Clock } from '../clock.js';
import { recordOr } from '../unknown-values.js';

const NOTES_PER_CHANNEL = 20;
/** Choices kept per person (the oldest go first). */
const PICKS_KEPT = 200;
/** Home views whose state is kept per person. */
const HOMES_KEPT = 20;
/** Tries of one change when the person's record keeps changing under it (two tabs at once). */
const TRIES = 5;
const PERSON_STATE_TABLE = 'consolePersonState';

/** Ids of notes and views: unique across daemons without a shared counter. */
const newId = (prefix: string) => `${prefix}-${crypto.randomBytes(6).toString('hex')}`;

function addNote(rec: PersonRecord, n: Omit<Note, 'id' | 'atMilli'>, at: number): void {
  const list = rec.notes.concat({ ...n, id: newId('note'), atMilli: at });
  const inChannel = list.filter((x) => x.channelId === n.channelId);
  const drop = new Set(inChannel.slice(0, Math.max(0, inChannel.length - NOTES_PER_CHANNEL)));
  rec.notes = list.filter((x) => !drop.has(x));
}

/**
 * Follow an app's answer `{view, action}`: OPEN starts a new stack, PUSH adds on top,
 * UPDATE replaces the view with the same id (else the top), CLOSE closes the top.
 */
function apply(rec: PersonRecord, answer: unknown, ctx: Omit<OpenView, 'view'>): boolean {
  const a = recordOr(answer) ?? {};
  const shown = recordOr(a.view);
  const view = shown ? { ...shown } : undefined;
  const action = String(a.action ?? (view ? 'OPEN' : '')).toUpperCase();
  const stack = rec.views;
  if (action === 'CLOSE') {
    stack.pop();
    return true;
  }
  if (!view) return false;
  view.id ??= newId('view');
  const open: OpenView = { ...(stack.at(-1) ?? ctx), view };
  if (action === 'PUSH') stack.push({ ...open, view: { ...view, parentViewId: stack.at(-1)?.view.id } });
  else if (action === 'UPDATE' && stack.length) {
    const i = stack.findIndex((s) => s.view.id === view.id);
    stack[i >= 0 ? i : stack.length - 1] = open;
  } else stack.splice(0, stack.length, { ...ctx, view });
  return true;
}

/** What the person state needs of the store. */
export type PersonStateStore = Pick<Store, 'get' | 'transaction'>;

export function createPersonState(store: PersonStateStore, clock: Pick<Clock, 'now'>) {
  const now = () => clock.now();
  const read = (userId: string) => store.get(PERSON_STATE_TABLE, userId);

  /** Read the person's record, let `fn` change a copy, write it if nothing else did meanwhile. */
  async function change<T>(userId: string, fn: (rec: PersonRecord) => T): Promise<{ rec: PersonRecord; out: T }> {
    return store.transaction(
      async (tx) => {
        const before = await tx.get(PERSON_STATE_TABLE, userId);
        const rec: PersonRecord = before ? structuredClone(before) : { id: userId, notes: [], views: [], updatedAt: 0 };
        const untouched = JSON.stringify(rec);
        const out = fn(rec);
        // most answers show nothing (no note, no view): no write for them
        if (JSON.stringify(rec) === untouched) return { rec, out };
        rec.updatedAt = now();
        tx.put(PERSON_STATE_TABLE, userId, rec);
        return { rec, out };
      },
      { attempts: TRIES },
    );
  }

  return {
    async notes(userId: string, channelId: string, rootId?: string): Promise<Note[]> {
      return ((await read(userId))?.notes ?? []).filter((n) => n.channelId === channelId && n.rootId === rootId);
    },
    /** What the person chose in elements of messages and views, newest last. */
    async picks(userId: string): Promise<Choice[]> {
      return (await read(userId))?.picks ?? [];
    },
    /** Keep what the person chose in an element, in place of what they chose there before. */
    async pick(userId: string, p: Choice): Promise<void> {
      await change(userId, (rec) => {
        const others = (rec.picks ?? []).filter((x) => !(x.source === p.source && x.onAction === p.onAction));
        rec.picks = others.concat(p).slice(-PICKS_KEPT);
      });
    },
    /** The state of the person's home view `viewId` (what they typed in it). */
    async homeState(userId: string, viewId: string): Promise<unknown> {
      return (await read(userId))?.homes?.[viewId];
    },
    async keepHomeState(userId: string, viewId: string, state: unknown): Promise<void> {
      await change(userId, (rec) => {
        const homes = { ...rec.homes };
        delete homes[viewId]; // (re-added last: the most recent are kept)
        rec.homes = Object.fromEntries(
          Object.entries(homes)
            .concat([[viewId, state]])
            .slice(-HOMES_KEPT),
        );
      });
    },
    /** The view on top of the person's stack, if any. */
    async top(userId: string): Promise<OpenView | undefined> {
      return (await read(userId))?.views.at(-1);
    },
    /** Keep what was typed in the view on top (`viewId`) when the app answers without a new view. */
    async keepState(userId: string, viewId: string, state: unknown): Promise<void> {
      await change(userId, (rec) => {
        const top = rec.views.at(-1);
        if (top && String(top.view.id) === viewId) top.view.state = state;
      });
    },
    /**
     * What the person sees of an app's answer to something they did: its message as a note, its
     * view as the modal on top (or, `closeOnAck`, an acknowledged submit closes the top view).
     * Returns the page to go to.
     */
    async follow(
      userId: string,
      d: { appName: string; state: string; ephemeralMessage?: string; response?: unknown; appId: string },
      from: string,
      ctx: { channelId: string; returnTo: string; rootId?: string },
      closeOnAck = false,
    ): Promise<string> {
      const { rec } = await change(userId, (rec) => {
        if (d.ephemeralMessage)
          addNote(
            rec,
            { channelId: ctx.channelId, ...(ctx.rootId ? { rootId: ctx.rootId } : {}), from, text: d.ephemeralMessage },
            now(),
          );
        const shown =
          d.state === 'delivered' &&
          apply(rec, d.response, { appId: d.appId, channelId: ctx.channelId, returnTo: ctx.returnTo });
        if (!shown && closeOnAck && d.state === 'delivered') rec.views.pop();
      });
      return rec.views.at(-1)?.returnTo ?? ctx.returnTo;
    },
    /** Close the top view (Close, or a submit the app acknowledged without a view); the view on top after it. */
    async close(userId: string): Promise<OpenView | undefined> {
      const { rec } = await change(userId, (rec) => void rec.views.pop());
      return rec.views.at(-1);
    },
  };
}

export type PersonState = ReturnType<typeof createPersonState>;
