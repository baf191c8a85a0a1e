/**
 * A recording's events as a suite (docs/testing.md, "Recording a test"): what people did becomes the test's actions
 * (`say`, `click`, `select`, `date`, `enter`, `submit`, `close`, `shortcut`, `menu`, `react`, each `as:` the user
 * who did it), and what the app did in answer becomes its expectations (the answer to the call, the messages it
 * posted or updated, its reactions, the events it accepted). Messages are referred to by the names they are saved
 * as (`${standup}`), in the order they appeared, never by id; texts are matched as a person would check them
 * (see stable-text.ts).
 *
 * Pure: the same events give the same suite.
 */
import { elementsOf, inputsOf, optionsOf, textOf, titleOf, type Element } from '../blocks.js';
import type {
  RecordedCall,
  RecordedEvent,
  RecordedPerson,
  Recording,
  SeenMessage,
  SuiteEdits,
} from '../../recording-events.js';
import { loosen, stableText } from './stable-text.js';
import { fieldOf, stringOr, fieldsOf as obj } from '../../unknown-values.js';
import { must } from '../../must.js';

type Obj = Record<string, unknown>;

/** The owner's name in the workspace a run makes: a text that names the recording's owner otherwise refers to it. */
const RUN_OWNER_NAME = 'Owner';
const RESERVED = new Set(['env', 'run', 'app', 'users', 'test', 'daemon', 'owner']);
const ANSWERED = new Set(['acked', 'nacked', 'response']);
/** The test a recorded suite of an app over HTTP ends with. */
const SIGNATURE_TEST = 'calls that are not properly signed are refused';

/** A reference to a message, made a `${name}` once every step is known. */
interface Ref {
  ref: string;
}
type Step = Record<string, unknown>;

export interface RecordedSuite {
  /** The suite, without its `app` section (the caller knows how the app starts). */
  suite: {
    name: string;
    users?: Record<string, { name: string }>;
    channels?: string[];
    install: { users: string[] };
    tests: Array<{ name: string } & Obj>;
  };
  /** Every step of the recorded test as generated, before edits: what the editor offers to drop or loosen, by index. */
  steps: Step[];
  /** The app the test is about. */
  appId?: string;
  /** The apps the person used (the most used first): each may be chosen as the one the suite is about. */
  apps: Array<{ id: string; name: string; calls: number }>;
  /** What could not be recorded, in words. */
  notes: string[];
}

const isRef = (v: unknown): v is Ref => typeof fieldOf(v, 'ref') === 'string';
/** A recorded text written into a suite: `${` would be read as a reference. */
const literal = (s: string) => s.replace(/\$\{/g, () => '$${');

/** The name of a saved message: after the command that led to it, else its first word; unique in the test. */
function refName(hint: string, taken: Set<string>): string {
  let base = hint
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 40);
  if (!/^[a-z_]/.test(base)) base = `m_${base}`;
  if (!base || base === 'm_' || RESERVED.has(base)) base = 'message';
  let name = base;
  for (let i = 2; taken.has(name); i++) name = `${base}${i}`;
  taken.add(name);
  return name;
}

/** Suite names of the people who acted: owner, and the others by their display name. */
function namesOf(people: RecordedPerson[]): Map<string, string> {
  const taken = new Set<string>(RESERVED);
  const out = new Map<string, string>();
  for (const p of people) {
    if (p.owner) {
      out.set(p.id, 'owner');
      continue;
    }
    out.set(p.id, refName(p.name || 'user', taken));
  }
  return out;
}

/** The apps the person used, the most used first (an interactive call counts ten events), with their calls. */
function appsUsed(events: RecordedEvent[]): Array<{ id: string; calls: number; weight: number }> {
  const used = new Map<string, { id: string; calls: number; weight: number }>();
  for (const e of events)
    if (e.type === 'call') {
      const u = used.get(e.call.appId) ?? { id: e.call.appId, calls: 0, weight: 0 };
      u.calls++;
      u.weight += e.call.kind === 'event' ? 1 : 10;
      used.set(u.id, u);
    }
  return [...used.values()].sort((a, b) => b.weight - a.weight);
}

/** The app under test: the one chosen, else the one called most, else the one that posted first. */
function appUnderTest(events: RecordedEvent[], chosen?: string): string | undefined {
  const used = appsUsed(events);
  if (chosen && used.some((u) => u.id === chosen)) return chosen;
  if (used[0]) return used[0].id;
  for (const e of events) if (e.type === 'message' && e.message.appId) return e.message.appId;
  return undefined;
}

/** The option labels for `values` of a select or checkboxes element (the value itself when it has no label). */
function optionLabels(el: Obj, values: string[]): string[] {
  const opts = optionsOf(el);
  return values.map((v) => opts.find((o) => o.value === v)?.label || v);
}

/** A BLOCK_INTERACTION's chosen value(s): its `payload` is a JSON text of `{value}` or `{values}`. */
function chosen(call: RecordedCall): string[] {
  let p: Obj = {};
  try {
    p = obj(typeof call.payload.payload === 'string' ? JSON.parse(call.payload.payload) : call.payload.payload);
  } catch {
    /* not JSON: nothing chosen */
  }
  if (Array.isArray(p.values)) return p.values.map(String);
  return p.value === undefined ? [] : [String(p.value)];
}

/** A text as a suite expects it: the owner's name as the run names it, values that vary left out. */
const expectedTextFor =
  (owner: RecordedPerson | undefined) =>
  (text: string): string | undefined => {
    const fixed = stableText(text);
    if (fixed === undefined) return undefined;
    const lit = literal(fixed);
    return owner && owner.name !== RUN_OWNER_NAME && owner.name.length >= 3
      ? lit.split(owner.name).join('${users.owner.name}')
      : lit;
  };

/**
 * What a call's answer makes: the expectation, a note when it was not answered, and what it did to the modals: a view
 * opened, pushed or updated (`view`, with its `action`), or the top one closed (`view: null`).
 */
function answerOf(
  call: RecordedCall,
  expectedText: (t: string) => string | undefined,
): { step: Step; note?: string; view?: Obj | null; action?: string } {
  const r = obj(call.response);
  if (!call.outcome || !ANSWERED.has(call.outcome)) {
    const what =
      call.payload.slashCommand ?? call.payload.shortcut ?? call.payload.onAction ?? call.subject ?? call.kind;
    return {
      step: { expect: 'answered' },
      note: `the app did not answer ${String(what)} while recording (${call.outcome ?? 'no answer yet'}): the test expects it to`,
    };
  }
  const text = call.ephemeralMessage && expectedText(call.ephemeralMessage);
  if (call.outcome === 'nacked') return { step: { expect: 'nack', ...(text ? { text } : {}) } };
  if (call.outcome === 'response' && r.view) {
    const view = obj(r.view);
    const action = String(r.action ?? r.viewAction ?? 'OPEN').toUpperCase();
    // the app's home view updated in answer (the SDK's updateView): no modal; the run cannot read the home view
    if (view.type === 'HOME') return { step: { expect: 'answered' } };
    const title = titleOf(view);
    const inputs = inputsOf(view)
      .map((e) => e.label || e.blockId)
      .filter((x): x is string => !!x);
    return {
      step: {
        expect: 'modal',
        ...(title && stableText(title) === title ? { title: literal(title) } : {}),
        ...(inputs.length ? { inputs: inputs.map(literal) } : {}),
      },
      ...(action !== 'CLOSE' && action !== 'CLEAR' ? { view, action } : { view: null }),
    };
  }
  if (call.outcome === 'response' && Array.isArray(r.options ?? r.optionGroups))
    return { step: { expect: 'options', options: optionsOf(r).map((o) => literal(o.label)) } };
  const closes = call.kind === 'view-action' && call.payload.viewActionType === 'SUBMIT';
  return { step: { expect: 'ack', ...(text ? { text } : {}) }, ...(closes ? { view: null } : {}) };
}

/** The step of a click or a choice on an element of `els`; undefined for an element no step can use. */
function elementStep(call: RecordedCall, type: string, onAction: string, els: Element[]): Step | undefined {
  const el = els.find((e) => e.onAction === onAction);
  if (type === 'BUTTON') {
    const label = el ? textOf(el.el.text) : '';
    const sameLabel = els.filter((e) => e.type === 'button' && textOf(e.el.text) === label).length;
    return { click: label && sameLabel === 1 && stableText(label) === label ? literal(label) : { onAction } };
  }
  if (type === 'STATIC_SELECT_MENU' || type === 'DYNAMIC_SELECT_MENU' || type === 'CHECKBOXES') {
    const labels = optionLabels(el?.el ?? {}, chosen(call)).map(literal);
    return { select: type === 'CHECKBOXES' ? labels : (labels[0] ?? ''), in: onAction };
  }
  const given = chosen(call);
  // a date picked is what the person chose, not what the app wrote: written as it was
  if (type === 'DATE_PICKER' && given.length === 1) return { date: given[0], in: onAction };
  if (type === 'DATE_RANGE_PICKER' && given.length === 2) return { date: given, in: onAction };
  if (type === 'PLAIN_TEXT_INPUT') return { enter: literal(given[0] ?? ''), in: onAction };
  return undefined;
}

/**
 * The step of a use of the home view: the run cannot read that view, so the element is named by its onAction (and a
 * select's option by its value).
 */
function homeStep(call: RecordedCall, type: string, onAction: string): Step | undefined {
  if (type === 'BUTTON') return { click: { onAction } };
  if (type === 'STATIC_SELECT_MENU') return { select: literal(chosen(call)[0] ?? ''), in: onAction };
  const step = elementStep(call, type, onAction, []);
  return step && step.select === undefined ? step : undefined;
}

/** A submitted modal's inputs by label: text as typed, a select's option by label, checkboxes and ranges as lists. */
function submitted(call: RecordedCall): Obj {
  const view = obj(call.payload.view);
  const values = obj(obj(view.state).values);
  const fields: Obj = {};
  for (const input of inputsOf(view)) {
    const v = obj(obj(values[String(input.blockId)])[input.onAction]);
    const given = Array.isArray(v.values) ? v.values.map(String) : v.value === undefined ? [] : [String(v.value)];
    if (!given.length) continue;
    const name = literal(input.label || String(input.blockId));
    const labels =
      input.type === 'static_select_menu' || input.type === 'checkboxes' ? optionLabels(input.el, given) : given;
    fields[name] =
      input.type === 'checkboxes' || input.type === 'date_range_picker'
        ? labels.map(literal)
        : literal(labels.join('\n'));
  }
  return fields;
}

/** What a message is expected to be: its text as expected, its buttons by label. */
function shapeOf(m: SeenMessage, expectedText: (t: string) => string | undefined): Step {
  const text = expectedText(m.text);
  const buttons = elementsOf(m.blocks)
    .filter((e) => e.type === 'button')
    .map((e) => textOf(e.el.text))
    .filter((l) => l && stableText(l) === l);
  return { ...(text ? { text } : {}), ...(buttons.length ? { buttons } : {}) };
}

/** The dynamic selects a choice was made in: their DYNAMIC_MENU calls are part of that choice, not steps. */
const dynamicSelectsOf = (events: RecordedEvent[]) =>
  new Set(
    events.flatMap((e) =>
      e.type === 'call' && e.call.kind === 'block-interaction' && e.call.payload.actionType === 'DYNAMIC_SELECT_MENU'
        ? [String(e.call.payload.onAction)]
        : [],
    ),
  );

/** What every stage of the walk reads and never changes: the recording, and who and what the test is about. */
interface Context {
  rec: Recording;
  appId: string | undefined;
  /** The people by id. */
  people: Map<string, RecordedPerson>;
  /** The suite's names of the people who acted (`owner`, the others by their display name). */
  names: Map<string, string>;
  /** The names of the channels that have one (a direct conversation has none). */
  channelNames: Map<string, string>;
  /** The dynamic selects a choice was made in (their DYNAMIC_MENU calls are no steps). */
  dynamicSelected: Set<string>;
  expectedText: (text: string) => string | undefined;
}

/** The messages seen, and the steps they can be referred to by: what makes a `Ref`. */
interface Refs {
  messages: Map<string, SeenMessage>;
  /** The step that first showed each message (where it is saved). */
  shownAt: Map<string, Step>;
  /** The message the last action was on or made: an update of it needs no reference. */
  lastMessage?: string;
}

/** Where the test plays. */
interface Place {
  /** The test's own channel: the first one used. */
  channel?: string;
  /** Where the last action was: what the app posts is looked for there. */
  markChannel?: string;
  /** The other channels the steps name (the suite declares them). */
  used: Set<string>;
  unnamedNoted: boolean;
}

/** What the app's answers are expected after. */
interface Expecting {
  /** Expectations are written after a recorded action only (not after one that could not be). */
  inAction: boolean;
  /** Events are expected after what a person said or reacted (what their action made), not after a call's answer. */
  eventful: boolean;
  /** The event types expected since the last action (each once). */
  eventTypes: Set<string>;
  /** The hint a message posted in answer is named after (the command, the shortcut). */
  hint: string;
}

/** The walk over a recording's events: what it made so far, and the state the events share. */
interface Walk {
  ctx: Context;
  steps: Step[];
  notes: string[];
  /** The suite names of the people who acted. */
  acted: Set<string>;
  refs: Refs;
  place: Place;
  expecting: Expecting;
  /** The modals open, as the platform's client stacks them (the top last). */
  views: Obj[];
}

/**
 * A recording made a suite, in stages: the app under test chosen, the events walked into steps (what the person did
 * as actions, what the app answered as expectations), then the steps edited, their references resolved, and the suite
 * assembled.
 */
export function suiteOf(rec: Recording, edits: SuiteEdits = {}): RecordedSuite {
  const appId = appUnderTest(rec.events, edits.appId);
  const w = walkOf(rec, appId, otherAppsNoted(rec, appId));
  for (const e of rec.events) walkEvent(w, e);
  const appName = rec.apps.find((a) => a.id === appId)?.name ?? 'App';
  const { steps, acted, notes } = w;
  return assemble({ rec, edits, steps, acted, names: w.ctx.names, appId, appName, notes, channels: [...w.place.used] });
}

/** The notes on the other apps used: a suite tests one. */
function otherAppsNoted(rec: Recording, appId: string | undefined): string[] {
  const nameOf = (id: string) => rec.apps.find((a) => a.id === id)?.name ?? id;
  return appsUsed(rec.events)
    .filter((u) => u.id !== appId)
    .map(
      (other) =>
        `${nameOf(other.id)} was used too (${other.calls === 1 ? '1 call' : `${other.calls} calls`}): a suite tests one app; choose it as the app to make its own`,
    );
}

/** The walk's start: nothing walked yet. */
function walkOf(rec: Recording, appId: string | undefined, notes: string[]): Walk {
  return {
    ctx: {
      rec,
      appId,
      people: new Map(rec.people.map((p) => [p.id, p])),
      names: namesOf(rec.people),
      channelNames: new Map((rec.channels ?? []).map((c) => [c.id, c.name])),
      dynamicSelected: dynamicSelectsOf(rec.events),
      expectedText: expectedTextFor(rec.people.find((p) => p.owner)),
    },
    steps: [],
    notes,
    acted: new Set(['owner']),
    refs: { messages: new Map(), shownAt: new Map() },
    place: { used: new Set(), unnamedNoted: false },
    expecting: { inAction: false, eventful: false, eventTypes: new Set(), hint: 'message' },
    views: [],
  };
}

/** One event walked: the steps it adds, by what it is. */
function walkEvent(w: Walk, e: RecordedEvent): void {
  if (e.type === 'call') walkCall(w, e.call);
  else if (e.type === 'view-closed') {
    if (w.views.length) action(w, { close: true }, e.user);
    w.views.pop();
  } else if (e.type === 'message') walkMessage(w, e.message);
  else if (e.type === 'message-changed') walkChange(w, e.message);
  else if (e.type === 'message-deleted') {
    const r = refTo(w, e.id);
    if (w.refs.messages.get(e.id)?.appId === w.ctx.appId)
      expect(w, { expect: 'deleted', ...(r ? { message: r } : {}) });
  } else if (e.type === 'reaction') walkReaction(w, e);
}

const isPerson = (w: Walk, id: string) => !!w.ctx.people.get(id) && !w.ctx.people.get(id)?.bot;
const refTo = (w: Walk, id: string | undefined): Ref | undefined =>
  id && w.refs.shownAt.has(id) ? { ref: id } : undefined;

/** `as:` the one who acted, unless the owner (the one who acted is counted as acting in the suite). */
function asOf(w: Walk, user: string): Step {
  const n = w.ctx.names.get(user);
  if (n && n !== 'owner') {
    w.acted.add(n);
    return { as: n };
  }
  return {};
}

/** What a person did, as a step: what the app answers is expected after it (and where it was). */
function action(w: Walk, step: Step, user: string, channelId?: string): void {
  w.steps.push({ ...step, ...asOf(w, user) });
  const { place, expecting } = w;
  expecting.inAction = true;
  expecting.eventTypes = new Set();
  // what the app is expected to post next is looked for where the action was (a say in another channel: there)
  place.markChannel = channelId ?? place.channel;
  // the events a test expects are about its own channel
  expecting.eventful =
    place.markChannel === place.channel &&
    ((typeof step.say === 'string' && !step.say.startsWith('/')) || step.react !== undefined);
}

/** What the app answered, as a step, when it answers a recorded action. */
function expect(w: Walk, step: Step): void {
  if (w.expecting.inAction) w.steps.push(step);
}

/**
 * Whether what happened in `channelId` is part of the test: in the first channel used (it plays in the test's own
 * channel), or in another channel with a name (it plays there: the suite declares it). A direct conversation is not.
 */
function ours(w: Walk, channelId: string | undefined): boolean {
  const { place } = w;
  if (!channelId) return true;
  place.channel ??= channelId;
  if (channelId === place.channel || w.ctx.channelNames.has(channelId)) return true;
  if (!place.unnamedNoted) w.notes.push('what was done in a direct conversation is left out: a test plays in channels');
  place.unnamedNoted = true;
  return false;
}

/** Where a step is when not in the test's own channel: `channel: NAME` (declared in the suite's channels). */
function chan(w: Walk, channelId: string | undefined): Step {
  const name = channelId && channelId !== w.place.channel ? w.ctx.channelNames.get(channelId) : undefined;
  if (!name) return {};
  w.place.used.add(name);
  return { channel: name };
}

/** The expectations of a call's answer (an interactive call only), and what it did to the modals. */
function answer(w: Walk, call: RecordedCall): void {
  const a = answerOf(call, w.ctx.expectedText);
  const { views } = w;
  if (a.note) w.notes.push(a.note);
  if (a.view === null) views.pop();
  else if (a.view) {
    // OPEN starts a new stack, PUSH adds on top, UPDATE replaces the view with its id (else the top)
    const i = views.findIndex((v) => v.id !== undefined && v.id === a.view?.id);
    if (a.action === 'PUSH') views.push(a.view);
    else if (a.action === 'UPDATE' && views.length) views[i >= 0 ? i : views.length - 1] = a.view;
    else views.splice(0, views.length, a.view);
  }
  expect(w, a.step);
}

/** A call to the app under test: what the person did through it, and the app's answer. */
function walkCall(w: Walk, c: RecordedCall): void {
  if (c.appId !== w.ctx.appId) return;
  // the home view is in no channel (the call names the workspace's general one)
  const inHome = c.payload.sourceType === 'VIEW' && obj(c.payload.view).type === 'HOME';
  if (!inHome && !ours(w, stringOr(c.payload.channelId))) return;
  switch (c.kind) {
    case 'slash-command': {
      const text = String(c.payload.text ?? '');
      const root = refTo(w, stringOr(c.payload.threadRootId));
      const say = literal(`${String(c.payload.slashCommand)}${text ? ` ${text}` : ''}`);
      w.expecting.hint = String(c.payload.slashCommand ?? 'command').replace(/^\//, '');
      const at = stringOr(c.payload.channelId);
      action(w, { say, ...(root ? { thread: root } : {}), ...chan(w, at) }, c.user, at);
      answer(w, c);
      break;
    }
    case 'global-shortcut':
    case 'message-shortcut': {
      const on = refTo(w, stringOr(c.payload.messageId));
      w.expecting.hint = String(c.payload.shortcut ?? 'shortcut');
      action(w, { shortcut: literal(String(c.payload.shortcut ?? '')), ...(on ? { message: on } : {}) }, c.user);
      answer(w, c);
      break;
    }
    case 'block-interaction':
      interaction(w, c);
      break;
    case 'view-action':
      if (c.payload.viewActionType === 'CLOSE') {
        action(w, { close: true }, c.user);
        w.views.pop();
      } else {
        // a modal submitted: its inputs by label, a select's option by label, checkboxes as a list
        action(w, { submit: submitted(c) }, c.user);
        answer(w, c);
      }
      break;
    case 'dynamic-menu':
      // a dynamic select asks for options before the choice: the select step asks for them itself
      if (w.ctx.dynamicSelected.has(String(c.payload.onAction))) break;
      action(
        w,
        { menu: String(c.payload.onAction), ...(c.payload.query ? { query: literal(String(c.payload.query)) } : {}) },
        c.user,
      );
      answer(w, c);
      break;
    case 'event': {
      const type = c.subject ?? '';
      const { expecting } = w;
      if (!type || !expecting.eventful || expecting.eventTypes.has(type)) break;
      expecting.eventTypes.add(type);
      if (c.outcome !== 'acked')
        w.notes.push(`the app did not accept the event ${type} while recording: the test expects it to`);
      expect(w, { expect: 'event', type });
      break;
    }
  }
}

/** A click or a choice in a message or a modal. */
function interaction(w: Walk, call: RecordedCall): void {
  const p = call.payload;
  const onAction = String(p.onAction ?? '');
  const inView = p.sourceType === 'VIEW';
  const home = inView && obj(p.view).type === 'HOME';
  const source = inView
    ? obj(p.view ?? w.views.at(-1))
    : { blocks: w.refs.messages.get(String(p.sourceId))?.blocks ?? [] };
  const els = elementsOf(source.blocks);
  const r = inView ? undefined : refTo(w, String(p.sourceId));
  const where: Step = home ? { home: true } : inView ? { modal: true } : r ? { message: r } : {};
  const type = String(p.actionType ?? '');
  const step = home ? homeStep(call, type, onAction) : elementStep(call, type, onAction, els);
  if (!step) {
    const what = `a ${type.toLowerCase().replace(/_/g, ' ')}${home ? " in the app's home view" : ''}`;
    w.notes.push(`${what} (${onAction}) is not a step a suite has: left out`);
    w.expecting.inAction = false;
    return;
  }
  action(w, { ...step, ...where }, call.user);
  if (!inView) w.refs.lastMessage = String(p.sourceId);
  answer(w, call);
}

/** A message posted: what a person said, or what the app posted (saved where it first shows, to be referred to). */
function walkMessage(w: Walk, m: SeenMessage): void {
  const { ctx, refs, place } = w;
  if (!ours(w, m.channelId)) return;
  refs.messages.set(m.id, m);
  const thread = m.threadRootId ? (refTo(w, m.threadRootId) ?? true) : undefined;
  if (!m.appId && isPerson(w, m.author)) {
    const step: Step = { say: literal(m.text), ...(thread ? { thread } : {}), ...chan(w, m.channelId) };
    action(w, step, m.author, m.channelId);
    const said = must(w.steps[w.steps.length - 1], 'the step just recorded');
    said._shows = m.id;
    said._hint = m.text.split(/\s+/)[0] ?? 'message';
    refs.shownAt.set(m.id, said);
    refs.lastMessage = m.id;
  } else if (m.appId === ctx.appId) {
    // posted elsewhere than where the last action was: said where (the test's own channel by reference)
    const elsewhere =
      m.channelId === place.markChannel
        ? {}
        : m.channelId === place.channel
          ? { channel: '${test.channel}' }
          : chan(w, m.channelId);
    const to = m.ephemeralTo?.length === 1 ? ctx.names.get(m.ephemeralTo[0] ?? '') : undefined;
    const step: Step = {
      expect: 'message',
      ...shapeOf(m, ctx.expectedText),
      ...(thread ? { thread } : {}),
      ...elsewhere,
      ...(to !== undefined ? { ephemeralTo: to } : {}),
    };
    if (!w.expecting.inAction) return;
    step._shows = m.id;
    step._hint = w.expecting.hint;
    w.steps.push(step);
    refs.shownAt.set(m.id, step);
  }
}

/** A message changed: the app's update of one, expected. */
function walkChange(w: Walk, m: SeenMessage): void {
  const { refs } = w;
  if (!refs.messages.has(m.id) && !ours(w, m.channelId)) return;
  refs.messages.set(m.id, m);
  if (m.appId !== w.ctx.appId) return;
  const r = m.id === refs.lastMessage ? undefined : refTo(w, m.id);
  expect(w, { expect: 'updated', ...shapeOf(m, w.ctx.expectedText), ...(r ? { message: r } : {}) });
}

/** A reaction: a person's is an action, the app's is expected. */
function walkReaction(w: Walk, e: Extract<RecordedEvent, { type: 'reaction' }>): void {
  const target = w.refs.messages.get(e.messageId);
  if (target && !ours(w, target.channelId)) return;
  const r = refTo(w, e.messageId);
  if (isPerson(w, e.user)) {
    action(w, { react: e.code, ...(r ? { message: r } : {}) }, e.user);
    w.expecting.hint = e.code;
  } else expect(w, { expect: 'reaction', code: e.code, ...(r ? { message: r } : {}) });
}

/** The suite of the steps walked: the test (edited), the signature check, the people who acted. */
function assemble(w: {
  rec: Recording;
  edits: SuiteEdits;
  steps: Step[];
  acted: Set<string>;
  names: Map<string, string>;
  appId: string | undefined;
  appName: string;
  notes: string[];
  channels: string[];
}): RecordedSuite {
  const { rec, edits, steps, acted, names, appId, appName, notes, channels } = w;
  const edited = applyEdits(steps, edits);
  const tests: Array<{ name: string } & Obj> = [
    { name: edits.testName?.trim() || testNameOf(steps), steps: resolveRefs(edited) },
  ];
  // an app called over HTTP must check the signature of what it is sent: what a person's clicks cannot show
  const overHttp = rec.events.some((e) => e.type === 'call' && e.call.appId === appId && e.call.transport === 'http');
  if (overHttp && edits.signatureCheck !== false)
    tests.push({ name: SIGNATURE_TEST, steps: [{ expect: 'signature-check' }] });
  const others = [...acted].filter((n) => n !== 'owner');
  const users = Object.fromEntries(
    rec.people.filter((p) => others.includes(names.get(p.id) ?? '')).map((p) => [names.get(p.id), { name: p.name }]),
  ) as Record<string, { name: string }>;
  return {
    suite: {
      name: edits.suiteName?.trim() || appName,
      ...(others.length ? { users } : {}),
      ...(channels.length ? { channels } : {}),
      install: { users: ['owner', ...others] },
      tests,
    },
    steps: resolveRefs(steps),
    ...(appId ? { appId } : {}),
    apps: appsUsed(rec.events).map((u) => ({
      id: u.id,
      name: rec.apps.find((a) => a.id === u.id)?.name ?? u.id,
      calls: u.calls,
    })),
    notes,
  };
}

/** Steps dropped, and text expectations loosened, by their index in the generated list. */
function applyEdits(steps: Step[], edits: SuiteEdits): Step[] {
  const drop = new Set(edits.drop ?? []);
  const loose = new Set(edits.loose ?? []);
  return steps.flatMap((s, i) => {
    if (drop.has(i)) return [];
    if (loose.has(i) && typeof s.text === 'string') return [{ ...s, text: loosen(s.text) }];
    return [s];
  });
}

/** A test's default name: what its first actions were. */
function testNameOf(steps: Step[]): string {
  const acts = steps
    .filter((s) => s.expect === undefined)
    .slice(0, 3)
    .map((s) => {
      const [k, v] = Object.entries(s)[0] ?? ['', ''];
      return `${k} ${typeof v === 'string' ? v : String(fieldOf(v, 'onAction') ?? '')}`.trim();
    });
  return acts.length ? `recorded: ${acts.join(', ')}` : 'recorded conversation';
}

/**
 * The references made names: the step that first showed a referred-to message saves it (`save: standup`), named after
 * what led to it; a message no step refers to is not saved.
 */
function resolveRefs(steps: Step[]): Step[] {
  const wanted = new Set<string>();
  for (const s of steps) for (const v of Object.values(s)) if (isRef(v)) wanted.add(v.ref);
  const taken = new Set<string>();
  const nameOf = new Map<string, string>();
  return steps.map((s) => {
    const out: Step = {};
    for (const [k, v] of Object.entries(s)) {
      if (k === '_hint' || k === '_shows') continue;
      if (!isRef(v)) out[k] = v;
      else if (nameOf.has(v.ref)) out[k] = `\${${nameOf.get(v.ref)}}`;
    }
    const shows = stringOr(s._shows);
    if (shows && wanted.has(shows)) {
      const n = refName(String(s._hint ?? 'message'), taken);
      nameOf.set(shows, n);
      out.save = n;
    }
    return out;
  });
}
