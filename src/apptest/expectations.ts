/**
 * What a step expects of the app (docs/testing.md, "Expectations"), each within its time budget:
 * how it answered the last call (ack, nack, a modal, menu options), what it posted, changed or
 * deleted since the last action, a reaction, an event that reached it, no failed call, and its
 * refusal of badly signed requests. What the app does after answering is looked for again and
 * again until it is there or the budget is spent; a failure says what was expected and what
 * happened instead.
 */
import type { Delivery, Message } from './api.js';
import { buttonLabels, inputName, inputNamed, inputsOf, optionsOf, titleOf } from './blocks.js';
import { StepFailed, type TestContext } from './context.js';
import { listOf, matcher, type Matcher } from './match.js';
import { idOf } from './refs.js';
import type {
  AnswerStep,
  DeletedStep,
  EventExpectStep,
  ExpectStep,
  MessageStep,
  ModalStep,
  NoMessageStep,
  OptionsStep,
  ReactionStep,
  Resolved,
  SignatureStep,
  UpdatedStep,
} from './steps.js';
import { messageOf, recordOr, stringOr } from '../unknown-values.js';
import { authorNames, underTest, type Author } from './authors.js';
import { answerText, whatHappened } from './answers.js';

type Obj = Record<string, unknown>;

/**
 * Look again until `look` finds what it wants, at most `withinMs` (once at least, and once more
 * after the budget ends, so that a loaded machine's late look still counts). The pause between
 * looks starts short and grows.
 */
async function poll<T>(withinMs: number, look: () => Promise<T | undefined>): Promise<T | undefined> {
  const end = Date.now() + withinMs;
  let pause = 10;
  for (;;) {
    const found = await look();
    if (found !== undefined) return found;
    const left = end - Date.now();
    if (left <= 0) return undefined;
    await new Promise((r) => setTimeout(r, Math.min(pause, left)));
    pause = Math.min(100, pause * 1.5);
  }
}

const quote = (s: string | undefined) => JSON.stringify(s ?? '');
const cut = (s: string, n = 200) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** A step about a call's answer reports the time the app took to answer it, not the time the check took. */
function answerTime(ctx: TestContext, d: Delivery): void {
  const ms = d.attempts.at(-1)?.latencyMs;
  if (ms !== undefined) ctx.stepMs = Math.round(ms);
}

/** The call the last action made; expectations about an answer need one. */
function lastCall(ctx: TestContext, kind: string): Delivery {
  if (ctx.lastCall) return ctx.lastCall;
  if (!ctx.lastActionTitle)
    throw new StepFailed(`expect ${kind} is about the last action's call, and no action came before it`);
  throw new StepFailed(
    `the last action (${ctx.lastActionTitle}) made no call to the app: expect ${kind} is about a /command, click, choice, submit, shortcut, menu or event`,
  );
}

function outcome(
  ctx: TestContext,
  s: Resolved<AnswerStep<'answered' | 'ack' | 'nack'>>,
  kind: 'answered' | 'ack' | 'nack',
  want: (o: string | undefined) => boolean,
  expected: string,
): Delivery {
  const d = lastCall(ctx, kind);
  const within = ctx.within(s);
  const latency = d.attempts.at(-1)?.latencyMs ?? 0;
  answerTime(ctx, d);
  if (!want(d.outcome))
    throw new StepFailed(`the app did not ${expected.replace(/^an? /, '')}`, {
      expected: `${expected} within ${within} ms`,
      happened: whatHappened(d),
      call: d,
    });
  if (latency > within)
    throw new StepFailed(`the app answered, but after ${latency} ms`, {
      expected: `${expected} within ${within} ms`,
      happened: answerText(d),
      call: d,
    });
  if (typeof s.text === 'string') {
    const m = matcher(s.text, false);
    if (!m.test(d.ephemeralMessage))
      throw new StepFailed(`the app ${kind === 'nack' ? 'nacked' : 'answered'} without the message expected`, {
        expected: `the user is shown ${m.shown}`,
        happened: d.ephemeralMessage ? `the user is shown ${quote(d.ephemeralMessage)}` : 'no message is shown',
        call: d,
      });
  }
  return d;
}

/** What a list of messages holds, in a few words each, and who posted each. */
const listed = (ms: Message[], who: (authorId: string) => Author) =>
  ms
    .slice(-5)
    .map(
      (m) =>
        `${quote(cut(m.text, 100))}${m.threadReplyInfo ? ' (in a thread)' : ''}${m.ephemeral ? ' (ephemeral)' : ''}${buttonLabels(m.blocks).length ? ` [${buttonLabels(m.blocks).join(', ')}]` : ''} by ${who(m.author).shown}`,
    )
    .join('; ');

interface AuthorTest {
  test(m: Pick<Message, 'author'>): boolean;
  shown: string;
  /** It is the app under test. */
  app?: boolean;
}

/** A step about what was posted: `message` or `no-message`. */
type Posted = Resolved<MessageStep | NoMessageStep>;

/** Who a `from` means: the app's bot (by default), or a user of the suite. */
function authorTest(ctx: TestContext, from: unknown): AuthorTest {
  if (from === undefined || from === 'app') {
    const bot = ctx.env.app.botId;
    const people = new Set([...ctx.env.users.values()].map((u) => u.id));
    return { test: (m) => (bot ? m.author === bot : !people.has(m.author)), shown: 'the app', app: true };
  }
  const u = ctx.user(from);
  return { test: (m) => m.author === u.id, shown: String(from) };
}

interface MessageWant {
  text?: Matcher;
  buttons: Matcher[];
  thread?: boolean | string;
  ephemeral: boolean;
  author: AuthorTest;
}

function wantOf(ctx: TestContext, s: Posted): MessageWant {
  return {
    text: typeof s.text === 'string' ? matcher(s.text, false) : undefined,
    buttons: listOf(s.buttons).map((b) => matcher(b, true)),
    thread: s.thread === undefined ? undefined : typeof s.thread === 'boolean' ? s.thread : idOf(s.thread),
    ephemeral: s.ephemeralTo !== undefined,
    author: authorTest(ctx, s.from),
  };
}

function matches(w: MessageWant, m: Message): boolean {
  if (!w.author.test(m)) return false;
  if (w.text && !w.text.test(m.text)) return false;
  const labels = buttonLabels(m.blocks);
  if (!w.buttons.every((b) => labels.some((l) => b.test(l)))) return false;
  const root = m.threadReplyInfo?.rootId;
  if (w.thread === true && !root) return false;
  if (w.thread === false && root) return false;
  if (typeof w.thread === 'string' && root !== w.thread) return false;
  if (w.ephemeral && !m.ephemeral) return false;
  return true;
}

function describeWant(w: MessageWant, s: Posted): string {
  const parts = [`a message from ${w.author.shown}`];
  if (w.text) parts.push(`holding ${w.text.shown}`);
  if (w.buttons.length) parts.push(`with buttons ${w.buttons.map((b) => b.shown).join(', ')}`);
  if (w.thread === true) parts.push('in a thread');
  if (w.thread === false) parts.push('not in a thread');
  if (typeof w.thread === 'string') parts.push(`in the thread of ${w.thread}`);
  if (w.ephemeral) parts.push(`only ${String(s.ephemeralTo)} sees`);
  return parts.join(' ');
}

/** Messages posted after the last action's mark, as `client`'s user sees them. */
async function since(ctx: TestContext, s: Posted, channel: string): Promise<Message[]> {
  const viewer = typeof s.ephemeralTo === 'string' ? s.ephemeralTo : 'owner';
  const client = await ctx.clientOf(viewer);
  const mark = ctx.mark?.channel === channel ? ctx.mark : undefined;
  let list: Message[];
  try {
    list = await ctx.env.api.messagesAfter(client, channel, viewer === 'owner' ? mark?.cursor : undefined);
  } catch (e) {
    throw new StepFailed(`the messages of ${channel} could not be read: ${messageOf(e)}`);
  }
  // seen by another user, the owner's mark may not be theirs: newer than it, and not it
  return viewer === 'owner'
    ? list
    : list.filter((m) => m.id !== mark?.cursor && m.timestampMilli >= (mark?.latest ?? 0));
}

async function message(ctx: TestContext, s: Resolved<MessageStep>): Promise<unknown> {
  const channel = typeof s.channel === 'string' ? s.channel : (ctx.mark?.channel ?? ctx.channelId);
  const w = wantOf(ctx, s);
  const within = ctx.within(s);
  let seen: Message[] = [];
  const found = await poll(within, async () => {
    seen = await since(ctx, s, channel);
    return seen.find((m) => matches(w, m));
  });
  if (found) {
    ctx.snapshots.set(found.id, found);
    return found;
  }
  const expected = `${describeWant(w, s)}, within ${within} ms`;
  if (!seen.length)
    throw new StepFailed(`the app posted no such message within ${within} ms`, {
      expected,
      happened: `nothing was posted${ctx.lastActionTitle ? ` after "${ctx.lastActionTitle}"` : ''}`,
    });
  // on a shared daemon another app may have answered: say which, beside what the app under test did
  const who = await authorNames(ctx);
  const byAnyone: MessageWant = { ...w, author: { test: () => true, shown: 'anyone' } };
  const others = w.author.app
    ? [
        ...new Set(
          seen
            .filter((m) => matches(byAnyone, m))
            .map((m) => who(m.author))
            .flatMap((a) => (a.otherApp && a.app ? [a.app] : [])),
        ),
      ]
    : [];
  throw new StepFailed(
    `the app posted no such message within ${within} ms${others.length ? `; another app did: ${others.join(', ')}` : ''}`,
    {
      expected,
      happened: `${seen.length} message${seen.length === 1 ? ' was' : 's were'} posted, none like that${w.author.app ? ` from ${underTest(ctx)}` : ''}: ${listed(seen, who)}`,
    },
  );
}

async function noMessage(ctx: TestContext, s: Resolved<NoMessageStep>): Promise<unknown> {
  const channel = typeof s.channel === 'string' ? s.channel : (ctx.mark?.channel ?? ctx.channelId);
  const w = wantOf(ctx, s);
  const within = ctx.within(s);
  const found = await poll(within, async () => (await since(ctx, s, channel)).find((m) => matches(w, m)) ?? undefined);
  // poll stops at the first match; without one it has waited the whole budget
  if (found)
    throw new StepFailed('the app posted a message it should not have', {
      expected: `no ${describeWant(w, s).replace(/^a /, '')} within ${within} ms`,
      happened: `it posted ${listed([found], await authorNames(ctx))}`,
    });
  return null;
}

/** The message an expectation is about: `message`, else the one the last click or choice was in. */
function targetOf(
  ctx: TestContext,
  s: Resolved<UpdatedStep | DeletedStep | ReactionStep>,
  fallback: Message | undefined,
  what: string,
): { id: string; before?: Content; channel: string } {
  if (s.message !== undefined) {
    const id = idOf(s.message);
    if (!id) throw new StepFailed(`message must name a message; it is ${JSON.stringify(s.message)}`);
    // a saved message (`message: ${said}`), as it was then
    const saved = recordOr(s.message);
    return { id, before: ctx.snapshots.get(id) ?? saved, channel: stringOr(saved?.channelId) ?? ctx.channelId };
  }
  if (!fallback) throw new StepFailed(`no message to check: name it with message (${what})`);
  return {
    id: fallback.id,
    before: ctx.snapshots.get(fallback.id) ?? fallback,
    channel: fallback.channelId ?? ctx.channelId,
  };
}

/** What an update changes of a message. */
interface Content {
  text?: unknown;
  blocks?: unknown;
  attachments?: unknown;
}
const content = (m: Content) => JSON.stringify([m.text, m.blocks ?? [], m.attachments ?? []]);

async function updated(ctx: TestContext, s: Resolved<UpdatedStep>): Promise<unknown> {
  const t = targetOf(ctx, s, ctx.lastSource, 'no click or choice came before');
  const text = typeof s.text === 'string' ? matcher(s.text, false) : undefined;
  const buttons = listOf(s.buttons).map((b) => matcher(b, true));
  const within = ctx.within(s);
  const owner = await ctx.clientOf('owner');
  let now: Message | undefined;
  const ok = (m: Message) =>
    (t.before ? content(m) !== content(t.before) : m.edited === true) &&
    (!text || text.test(m.text)) &&
    buttons.every((b) => buttonLabels(m.blocks).some((l) => b.test(l)));
  const found = await poll(within, async () => {
    now = await ctx.env.api.message(owner, t.channel, t.id);
    return now && ok(now) ? now : undefined;
  });
  if (found) {
    ctx.snapshots.set(found.id, found);
    return found;
  }
  const expected = `message ${t.id} changed${text ? ` to hold ${text.shown}` : ''}${buttons.length ? ` with buttons ${buttons.map((b) => b.shown).join(', ')}` : ''}, within ${within} ms`;
  if (!now) throw new StepFailed('the message is gone', { expected, happened: `message ${t.id} was deleted` });
  const same = t.before && content(now) === content(t.before);
  throw new StepFailed(
    same
      ? `the app did not update the message within ${within} ms`
      : `the message was not updated as expected within ${within} ms`,
    {
      expected,
      happened: `${same ? 'it is unchanged' : 'it changed'}: it reads ${quote(cut(now.text))}${buttonLabels(now.blocks).length ? ` [${buttonLabels(now.blocks).join(', ')}]` : ''}`,
    },
  );
}

async function deleted(ctx: TestContext, s: Resolved<DeletedStep>): Promise<unknown> {
  const t = targetOf(ctx, s, ctx.lastSource, 'no click or choice came before');
  const within = ctx.within(s);
  const owner = await ctx.clientOf('owner');
  const gone = await poll(within, async () => ((await ctx.env.api.message(owner, t.channel, t.id)) ? undefined : true));
  if (!gone)
    throw new StepFailed(`the app did not delete the message within ${within} ms`, {
      expected: `message ${t.id} deleted within ${within} ms`,
      happened: 'it is still there',
    });
  return { id: t.id, deleted: true };
}

async function reaction(ctx: TestContext, s: Resolved<ReactionStep>): Promise<unknown> {
  const t = targetOf(ctx, s, ctx.lastSaid, 'nothing was said in this test yet');
  const code = typeof s.code === 'string' ? s.code.replace(/^:?([^:]+):?$/, ':$1:') : undefined;
  const who = authorTest(ctx, s.from);
  const within = ctx.within(s);
  const owner = await ctx.clientOf('owner');
  let now: Message | undefined;
  const found = await poll(within, async () => {
    now = await ctx.env.api.message(owner, t.channel, t.id);
    return now?.reactions?.find((r) => (!code || r.code === code) && who.test({ author: r.user }));
  });
  if (found) return found;
  const had = now?.reactions?.map((r) => `${r.code} by ${r.user}`).join(', ');
  throw new StepFailed(`no reaction${code ? ` ${code}` : ''} from ${who.shown} within ${within} ms`, {
    expected: `${who.shown} reacts${code ? ` with ${code}` : ''} to ${t.id} within ${within} ms`,
    happened: now ? `its reactions: ${had || 'none'}` : 'the message is gone',
  });
}

function modal(ctx: TestContext, s: Resolved<ModalStep>): unknown {
  const d = lastCall(ctx, 'modal');
  answerTime(ctx, d);
  const view = recordOr(recordOr(d.response)?.view);
  if (d.outcome !== 'response' || !view)
    throw new StepFailed('the app did not open a modal', {
      expected: 'an answer with a view (a modal)',
      happened: whatHappened(d),
      call: d,
    });
  const open = ctx.modals.find((m) => m.view.callbackId === view.callbackId && titleOf(m.view) === titleOf(view)) ?? {
    view,
  };
  const problems: string[] = [];
  if (typeof s.title === 'string' && !matcher(s.title, true).test(titleOf(view)))
    problems.push(`its title is ${quote(titleOf(view))}, not ${matcher(s.title, true).shown}`);
  if (typeof s.callbackId === 'string' && view.callbackId !== s.callbackId)
    problems.push(`its callbackId is ${quote(String(view.callbackId ?? ''))}, not ${quote(s.callbackId)}`);
  const inputs = inputsOf(view);
  for (const name of listOf(s.inputs))
    if (!inputs.some((e) => inputNamed(e, name)))
      problems.push(
        `it has no input ${quote(name)} (its inputs: ${inputs.map((e) => quote(inputName(e))).join(', ') || 'none'})`,
      );
  if (problems.length)
    throw new StepFailed('the modal is not the one expected', {
      expected: [
        s.title && `titled ${String(s.title)}`,
        s.inputs && `with inputs ${listOf(s.inputs).join(', ')}`,
        s.callbackId && `callbackId ${String(s.callbackId)}`,
      ]
        .filter(Boolean)
        .join(', '),
      happened: problems.join('; '),
      call: d,
    });
  return open.view;
}

function options(ctx: TestContext, s: Resolved<OptionsStep>): unknown {
  const d = lastCall(ctx, 'options');
  answerTime(ctx, d);
  const answer = recordOr(d.response);
  const got = optionsOf(answer ?? {});
  if (d.outcome !== 'response' || !Array.isArray(answer?.options))
    throw new StepFailed('the app did not answer with menu options', {
      expected: 'an answer with options',
      happened: whatHappened(d),
      call: d,
    });
  const labels = got.map((o) => o.label);
  const shown = labels.map((l) => quote(l)).join(', ') || 'no option';
  if (Array.isArray(s.options)) {
    const want = listOf(s.options).map((o) => matcher(o, true));
    if (want.length !== labels.length || !want.every((m, i) => m.test(labels[i])))
      throw new StepFailed('the menu options are not the ones expected', {
        expected: `exactly ${want.map((m) => m.shown).join(', ') || 'no option'}`,
        happened: `it offered ${shown}`,
        call: d,
      });
  }
  const missing = listOf(s.includes)
    .map((o) => matcher(o, true))
    .filter((m) => !labels.some((l) => m.test(l)));
  if (missing.length)
    throw new StepFailed('the menu lacks options', {
      expected: `options including ${missing.map((m) => m.shown).join(', ')}`,
      happened: `it offered ${shown}`,
      call: d,
    });
  return got;
}

/**
 * Whether a delivery is this test's: a call one of its steps made, or an event about its channel (else made since the
 * last action).
 */
function ofThisTest(ctx: TestContext, d: Delivery): boolean {
  // every call a step makes is recorded: another call is another test's
  if (ctx.calls.has(d.id) || d.kind !== 'event') return ctx.calls.has(d.id);
  const raw = recordOr(d.payload)?.body;
  let body: Obj | undefined;
  try {
    body = typeof raw === 'string' ? recordOr(JSON.parse(raw)) : undefined;
  } catch {
    body = undefined;
  }
  if (typeof body?.cId === 'string') return body.cId === ctx.channelId;
  return Date.parse(d.createdAt) >= ctx.actionAt - 1000;
}

async function event(ctx: TestContext, s: Resolved<EventExpectStep>): Promise<unknown> {
  const type = String(s.type);
  const within = ctx.within(s);
  let seen: Delivery[] = [];
  const found = await poll(within, async () => {
    seen = (await ctx.env.api.deliveries({ appId: ctx.env.app.id, limit: 50 })).filter(
      (d) =>
        d.kind === 'event' &&
        d.subject === type &&
        Date.parse(d.createdAt) >= ctx.actionAt - 1000 &&
        ofThisTest(ctx, d),
    );
    return seen.find((d) => d.state === 'delivered');
  });
  if (found) return found;
  const failed = seen.find((d) => d.state === 'failed' || d.state === 'retrying');
  if (failed)
    throw new StepFailed(`the ${type} event reached the app, which did not accept it`, {
      expected: `the app acks a ${type} event within ${within} ms`,
      happened: whatHappened(failed),
      call: failed,
    });
  throw new StepFailed(`no ${type} event reached the app within ${within} ms`, {
    expected: `a ${type} event${ctx.lastActionTitle ? ` after "${ctx.lastActionTitle}"` : ''}, within ${within} ms`,
    happened: seen.length
      ? `${seen.length} still on the way (${seen.map((d) => d.state).join(', ')})`
      : 'none was sent: does the app subscribe to it, with its scope, and did someone it can see it make it?',
  });
}

async function noFailedDeliveries(ctx: TestContext): Promise<unknown> {
  const failed = (await ctx.env.api.deliveries({ appId: ctx.env.app.id, failed: true })).filter((d) =>
    ofThisTest(ctx, d),
  );
  if (failed.length) {
    throw new StepFailed(`${failed.length} call${failed.length === 1 ? '' : 's'} to the app failed`, {
      expected: 'every call of this test answered well',
      happened: failed.map((d) => `${d.kind} ${d.subject ?? ''}: ${whatHappened(d)}`).join('; '),
      call: failed[0],
    });
  }
  return [];
}

/** The kind of call to probe: `kind`, else the first URL the app has. */
function probeKind(ctx: TestContext, s: Resolved<SignatureStep>): string {
  if (typeof s.kind === 'string') return s.kind;
  const a = ctx.env.app;
  if (a.slashCommands?.length) return 'slash-command';
  if (a.shortcuts?.some((x) => x.shortcutType === 'GLOBAL')) return 'global-shortcut';
  if (a.shortcuts?.length) return 'message-shortcut';
  if (a.blockInteraction) return 'block-interaction';
  if (a.viewAction) return 'view-action';
  if (a.dynamicMenus?.length) return 'dynamic-menu';
  if (a.eventSubscriptions?.url) return 'event';
  throw new StepFailed('the app has no URL to probe');
}

async function signatureCheck(ctx: TestContext, s: Resolved<SignatureStep>): Promise<unknown> {
  if (ctx.env.app.socketMode)
    throw new StepFailed('a socket-mode app gets no signed requests: signature-check is for apps in HTTP mode');
  const kind = probeKind(ctx, s);
  const p = await ctx.env.api.probe({
    appId: ctx.env.app.id,
    kind,
    timeoutMs: ctx.within(s),
    ...(kind === 'event' ? { channelId: ctx.channelId } : {}),
  });
  if (p.refusedBoth) return p;
  const one = (name: string, r: typeof p.unsigned) =>
    `${name}: ${r.refused ? 'refused' : 'ACCEPTED'} (${r.status ?? r.outcome}${r.error ? `, ${r.error}` : ''})`;
  const accepted = [!p.wrongSignature.refused && 'a wrong signature', !p.unsigned.refused && 'no signature']
    .filter(Boolean)
    .join(' and ');
  throw new StepFailed(
    `the app accepted a ${kind} request with ${accepted}: it does not check the signature (x-pumble-request-signature)`,
    {
      expected: 'a 4xx answer to a request with a wrong signature and to an unsigned one',
      happened: `${one('wrong signature', p.wrongSignature)}; ${one('unsigned', p.unsigned)}`,
    },
  );
}

/** Run an expectation step: the one its `expect` names. */
export function runExpectation(ctx: TestContext, s: Resolved<ExpectStep>): Promise<unknown> | unknown {
  switch (s.expect) {
    case 'answered':
      return outcome(
        ctx,
        s,
        'answered',
        (o) => o === 'acked' || o === 'response',
        'an answer (an ack, a modal or options)',
      );
    case 'ack':
      return outcome(ctx, s, 'ack', (o) => o === 'acked', 'an ack');
    case 'nack':
      return outcome(ctx, s, 'nack', (o) => o === 'nacked', 'a nack');
    case 'modal':
      return modal(ctx, s);
    case 'message':
      return message(ctx, s);
    case 'no-message':
      return noMessage(ctx, s);
    case 'updated':
      return updated(ctx, s);
    case 'deleted':
      return deleted(ctx, s);
    case 'options':
      return options(ctx, s);
    case 'reaction':
      return reaction(ctx, s);
    case 'event':
      return event(ctx, s);
    case 'no-failed-deliveries':
      return noFailedDeliveries(ctx);
    case 'signature-check':
      return signatureCheck(ctx, s);
    default: {
      // a kind the schema has and steps.ts lacks: the two are changed together
      const unknownKind: never = s;
      throw new Error(`internal: no runner for the step ${JSON.stringify(unknownKind)}`);
    }
  }
}
