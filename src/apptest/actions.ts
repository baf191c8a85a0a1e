/**
 * What a user does in a step (docs/testing.md, "Actions"), through the daemon's API as the
 * platform's client would: a message or a /command typed in a channel; a click, a choice, a modal
 * submitted or closed, a shortcut, a dynamic menu, each sent to the app as the user who did it
 * (POST …/deliveries with asUser); an event sent by the workspace; a reaction. Each returns what a
 * `save` keeps.
 */
import { CliError } from '../client/exit.js';
import type { Delivery, Message } from './api.js';
import {
  actionTypeOf,
  buttonLabels,
  elementsOf,
  isSelect,
  optionNamed,
  optionsOf,
  stateFor,
  textOf,
  type Element,
} from './blocks.js';
import { StepFailed, type TestContext } from './context.js';
import { mustBeAnswered } from './answers.js';
import { listOf, matcher } from './match.js';
import { idOf } from './refs.js';
import { stepTitle } from './titles.js';
import type {
  ActionStep,
  ClickStep,
  CloseStep,
  DateStep,
  EnterStep,
  EventStep,
  MenuStep,
  ReactStep,
  Resolved,
  SayStep,
  SelectStep,
  ShortcutStep,
  SubmitStep,
} from './steps.js';
import { must } from '../must.js';
import { recordOr } from '../unknown-values.js';

type Obj = Record<string, unknown>;
/** A step of a user's, as run: who does it (`as`). */
type ByUser = Resolved<Exclude<ActionStep, EventStep>>;

/** A refusal of the daemon (an unknown message, a field the app's manifest lacks) fails the step with its words. */
async function refusedAs<T>(what: string, p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof CliError && (e.exitCode === 4 || e.exitCode === 5))
      throw new StepFailed(`${what}: the daemon refused it: ${e.message}`);
    throw e;
  }
}

/** A trigger as the step's user: the call, recorded as this test's. */
async function send(ctx: TestContext, s: ByUser, body: Obj, what: string): Promise<Delivery> {
  const user = ctx.user(s.as);
  const owner = must(ctx.env.users.get('owner'));
  const d = await refusedAs(
    what,
    ctx.env.api.trigger({ appId: ctx.env.app.id, ...body, ...(user.id !== owner.id ? { asUser: user.id } : {}) }),
  );
  ctx.called(d);
  mustBeAnswered(ctx, d);
  return d;
}

/** The message a step names (`message`: a reference or an id), as the step's user sees it. */
async function namedMessage(ctx: TestContext, s: ByUser, ref: unknown): Promise<Message> {
  const id = idOf(ref);
  if (!id) throw new StepFailed(`message must name a message (a saved one, or its id); it is ${JSON.stringify(ref)}`);
  const saved = ref && typeof ref === 'object' && 'channelId' in ref ? ref.channelId : undefined;
  const channel = typeof saved === 'string' ? saved : ctx.channelId;
  const m = await ctx.env.api.message(await ctx.clientOf(s.as), channel, id);
  if (!m)
    throw new StepFailed(
      `message ${id} is not in ${channel === ctx.channelId ? "the test's channel" : channel} (or ${typeof s.as === 'string' ? s.as : 'owner'} does not see it)`,
    );
  return m;
}

/**
 * The newest message of the test's channel (threads included) holding an element that `pick` finds: of the app
 * under test, else of anyone.
 */
async function latestWith(
  ctx: TestContext,
  s: ByUser,
  pick: (m: Message) => Element | undefined,
  what: string,
): Promise<{ m: Message; el: Element }> {
  const seen = await ctx.env.api.messagesAfter(await ctx.clientOf(s.as), ctx.channelId, undefined);
  // the app under test's own messages first: another app of the workspace may post in the channel too
  const bot = ctx.env.app.botId;
  for (const own of bot ? [true, false] : [false])
    for (const m of [...seen].reverse()) {
      const el = own && m.author !== bot ? undefined : pick(m);
      if (el) return { m, el };
    }
  const offered = seen.flatMap((m) => buttonLabels(m.blocks)).map((l) => JSON.stringify(l));
  throw new StepFailed(`no message of the test's channel has ${what}`, {
    happened: seen.length
      ? `${seen.length} message${seen.length === 1 ? '' : 's'}${offered.length ? `, with buttons ${[...new Set(offered)].join(', ')}` : ', without buttons'}`
      : 'the channel has no message',
  });
}

/** The modal a step is about: a saved one (`ref`), else the one the app opened last in this test. */
function openModal(ctx: TestContext, ref?: unknown) {
  if (ref !== undefined && ref !== true) {
    const id = idOf(ref) ?? idOf(ref && typeof ref === 'object' && 'view' in ref ? ref.view : undefined);
    const found = ctx.modals.find((x) => x.view.id === id);
    if (!found)
      throw new StepFailed(
        `modal ${String(id)} is not open (${ctx.modals.length ? `open: ${ctx.modals.map((x) => x.view.id).join(', ')}` : 'no modal is open'})`,
      );
    return found;
  }
  const top = ctx.modals.at(-1);
  if (!top) throw new StepFailed('no modal is open: the app opened none in this test (or it was closed)');
  return top;
}

/** What an element is in: a message, or a view (a modal; the home view when none is given). */
type Source = { sourceId: string } | { sourceType: 'VIEW'; view?: Obj; channelId?: string };
/** A step about an element of a message, of the open modal or of the home view. */
type ElementStep = Resolved<ClickStep | SelectStep | DateStep | EnterStep>;

/**
 * An element of the app's home view for the step's user. The run cannot read that view (only the person's console
 * shows it), so the step names the element by its onAction; the daemon sends the app the home view the app published
 * for that user.
 */
function homeElement(s: ElementStep, type: string): { el: Element; source: Source } {
  const named = 'in' in s ? s.in : undefined;
  const onAction = typeof named === 'string' ? named : 'click' in s ? String(recordOr(s.click)?.onAction ?? '') : '';
  return { el: { type, onAction, el: {} }, source: { sourceType: 'VIEW' } };
}

/** A call about the home view went with a made-up modal: the app published no home view for that user. */
function mustBeHome(d: Delivery, s: ElementStep): void {
  if (recordOr(recordOr(d.payload)?.view)?.type !== 'HOME')
    throw new StepFailed(
      `the app has published no home view for ${typeof s.as === 'string' ? s.as : 'owner'}: there is nothing to use in it`,
      { call: d },
    );
}

/** Where an element is: in a message (by default the newest that has it), in the open modal, or in the home view. */
async function elementAt(
  ctx: TestContext,
  s: ElementStep,
  pick: (els: Element[]) => Element | undefined,
  what: string,
  homeType?: string,
): Promise<{ el: Element; source: Source }> {
  if (s.home === true && homeType) return homeElement(s, homeType);
  if (s.modal === true) {
    const modal = openModal(ctx);
    const el = pick(elementsOf(modal.view.blocks));
    if (!el)
      throw new StepFailed(`the open modal has no ${what}`, {
        happened: `its buttons: ${
          buttonLabels(modal.view.blocks)
            .map((l) => JSON.stringify(l))
            .join(', ') || 'none'
        }`,
      });
    return { el, source: { sourceType: 'VIEW', view: modal.view, channelId: modal.channelId } };
  }
  let m: Message;
  let el: Element | undefined;
  if (s.message !== undefined) {
    m = await namedMessage(ctx, s, s.message);
    el = pick(elementsOf(m.blocks));
    if (!el)
      throw new StepFailed(`message ${m.id} has no ${what}`, {
        happened: `it reads ${JSON.stringify(m.text)}; its buttons: ${
          buttonLabels(m.blocks)
            .map((l) => JSON.stringify(l))
            .join(', ') || 'none'
        }`,
      });
  } else ({ m, el } = await latestWith(ctx, s, (x) => pick(elementsOf(x.blocks)), what));
  ctx.snapshots.set(m.id, m);
  ctx.lastSource = m;
  return { el, source: { sourceId: m.id } };
}

async function say(ctx: TestContext, s: Resolved<SayStep>): Promise<unknown> {
  const text = String(s.say);
  const channel = typeof s.channel === 'string' ? s.channel : ctx.channelId;
  await ctx.beginAction(stepTitle(s), channel);
  const thread = s.thread === undefined ? undefined : idOf(s.thread);
  // a command of the app under test goes to it, whatever other app of the workspace has the same one
  const command = /^\/[A-Za-z0-9_-]{1,32}(?=\s|$)/.exec(text.trim())?.[0];
  const mine = ctx.env.app.slashCommands?.some((c) => c.command === command) ? ctx.env.app.id : undefined;
  const r = await refusedAs(
    'the message',
    ctx.env.api.say(await ctx.clientOf(s.as), channel, text, { threadRootId: thread, appId: mine }),
  );
  if (r.kind === 'message') {
    ctx.lastSaid = r.message;
    return r.message;
  }
  ctx.called(r.delivery);
  mustBeAnswered(ctx, r.delivery);
  return r.delivery;
}

async function click(ctx: TestContext, s: Resolved<ClickStep>): Promise<unknown> {
  await ctx.beginAction(stepTitle(s));
  const wanted = s.click;
  const label = typeof wanted === 'string' ? matcher(wanted, true) : undefined;
  const onAction = recordOr(wanted)?.onAction;
  const pick = (els: Element[]) =>
    els.find((e) => e.type === 'button' && (label ? label.test(textOf(e.el.text)) : e.onAction === onAction));
  const what = label ? `a button ${label.shown}` : `a button with onAction ${String(onAction)}`;
  const { el, source } = await elementAt(ctx, s, pick, what, 'button');
  const d = await send(
    ctx,
    s,
    {
      kind: 'block-interaction',
      ...source,
      onAction: el.onAction,
      actionType: 'BUTTON',
      value: typeof s.value === 'string' ? s.value : String(el.el.value ?? ''),
    },
    `click ${what}`,
  );
  if (s.home === true) mustBeHome(d, s);
  return d;
}

async function select(ctx: TestContext, s: Resolved<SelectStep>): Promise<unknown> {
  await ctx.beginAction(stepTitle(s));
  const menu = typeof s.in === 'string' ? s.in : undefined;
  const pick = (els: Element[]) => {
    const selects = els.filter(isSelect);
    if (!menu) return selects.length === 1 ? selects[0] : undefined;
    return selects.find((e) => e.onAction === menu || textOf(e.el.placeholder) === menu || e.label === menu);
  };
  const wanted = listOf(s.select);
  if (s.home === true) {
    // the home view is not readable by the run: the option is named by its value
    const { el, source } = homeElement(s, 'static_select_menu');
    const d = await send(
      ctx,
      s,
      {
        kind: 'block-interaction',
        ...source,
        onAction: el.onAction,
        actionType: 'STATIC_SELECT_MENU',
        value: wanted[0],
      },
      `select in ${el.onAction}`,
    );
    mustBeHome(d, s);
    return d;
  }
  const { el, source } = await elementAt(
    ctx,
    s,
    pick,
    menu ? `a select ${JSON.stringify(menu)}` : 'exactly one select (name it with in)',
  );
  let options = optionsOf(el.el);
  if (el.type === 'dynamic_select_menu') {
    // what the console does: ask the app for the options (what the user typed is the query), then choose one
    const asked = await send(
      ctx,
      s,
      {
        kind: 'dynamic-menu',
        onAction: el.onAction,
        query: typeof s.query === 'string' ? s.query : '',
        ...('sourceId' in source
          ? { sourceType: 'MESSAGE', sourceId: source.sourceId }
          : { sourceType: 'VIEW', sourceId: String(must(source.view).id), view: source.view }),
      },
      `the options of ${el.onAction}`,
    );
    if (asked.outcome !== 'response')
      throw new StepFailed(`the app did not answer the dynamic select ${el.onAction} with options`, {
        happened: `it answered ${asked.outcome}`,
        call: asked,
      });
    options = optionsOf(recordOr(asked.response) ?? {});
  }
  const chosen = wanted.map((w) => optionNamed(options, w, (l) => matcher(w, true).test(l)));
  const missing = wanted.filter((_w, i) => !chosen[i]);
  if (missing.length)
    throw new StepFailed(
      `the select ${el.onAction} has no option ${missing.map((x) => JSON.stringify(x)).join(', ')}`,
      { happened: `it offers ${options.map((o) => JSON.stringify(o.label)).join(', ') || 'nothing'}` },
    );
  const value =
    el.type === 'checkboxes' ? { values: chosen.map((o) => must(o).value) } : { value: must(chosen[0]).value };
  return send(
    ctx,
    s,
    { kind: 'block-interaction', ...source, onAction: el.onAction, actionType: actionTypeOf(el), ...value },
    `select in ${el.onAction}`,
  );
}

/** An element named by `in` (its onAction, label or placeholder) among those of `type`; else the only one. */
const namedIn = (s: Resolved<DateStep | EnterStep>, type: string) => (els: Element[]) => {
  const name = typeof s.in === 'string' ? s.in : undefined;
  const of = els.filter((e) => e.type === type);
  if (!name) return of.length === 1 ? of[0] : undefined;
  return of.find((e) => e.onAction === name || e.label === name || textOf(e.el.placeholder) === name);
};

/** A date picked (`date: 2026-12-01`) or a range (`date: [2026-12-01, 2026-12-05]`) in a message, modal or home. */
async function date(ctx: TestContext, s: Resolved<DateStep>): Promise<unknown> {
  await ctx.beginAction(stepTitle(s));
  const dates = listOf(s.date);
  const type = dates.length === 2 ? 'date_range_picker' : 'date_picker';
  const what = `${type === 'date_picker' ? 'a date picker' : 'a date range picker'}${typeof s.in === 'string' ? ` ${JSON.stringify(s.in)}` : ' (exactly one: name it with in)'}`;
  const { el, source } = await elementAt(ctx, s, namedIn(s, type), what, type);
  const d = await send(
    ctx,
    s,
    {
      kind: 'block-interaction',
      ...source,
      onAction: el.onAction,
      actionType: type.toUpperCase(),
      ...(type === 'date_picker' ? { value: dates[0] } : { values: dates }),
    },
    `the date in ${el.onAction}`,
  );
  if (s.home === true) mustBeHome(d, s);
  return d;
}

/** Text typed in a text input of a message, a modal or the home view and sent (an input that dispatches its action). */
async function enter(ctx: TestContext, s: Resolved<EnterStep>): Promise<unknown> {
  await ctx.beginAction(stepTitle(s));
  const what = `a text input${typeof s.in === 'string' ? ` ${JSON.stringify(s.in)}` : ' (exactly one: name it with in)'}`;
  const { el, source } = await elementAt(ctx, s, namedIn(s, 'plain_text_input'), what, 'plain_text_input');
  const d = await send(
    ctx,
    s,
    {
      kind: 'block-interaction',
      ...source,
      onAction: el.onAction,
      actionType: 'PLAIN_TEXT_INPUT',
      value: String(s.enter),
    },
    `the text in ${el.onAction}`,
  );
  if (s.home === true) mustBeHome(d, s);
  return d;
}

async function submit(ctx: TestContext, s: Resolved<SubmitStep>): Promise<unknown> {
  await ctx.beginAction(stepTitle(s));
  const modal = openModal(ctx, s.modal);
  const { state, problems } = stateFor(modal.view, s.submit);
  if (problems.length) throw new StepFailed(problems.join('; '));
  return send(
    ctx,
    s,
    { kind: 'view-action', viewActionType: 'SUBMIT', view: { ...modal.view, state }, channelId: modal.channelId },
    'the submit',
  );
}

async function close(ctx: TestContext, s: Resolved<CloseStep>): Promise<unknown> {
  await ctx.beginAction(stepTitle(s));
  const modal = openModal(ctx, s.close);
  if (modal.view.notifyOnClose !== true) {
    // the platform tells the app only when the view asks for it: closing is the client's own business
    ctx.modals.splice(ctx.modals.indexOf(modal), 1);
    return { sent: false, view: modal.view };
  }
  return send(
    ctx,
    s,
    { kind: 'view-action', viewActionType: 'CLOSE', view: modal.view, channelId: modal.channelId },
    'the close',
  );
}

async function shortcut(ctx: TestContext, s: Resolved<ShortcutStep>): Promise<unknown> {
  await ctx.beginAction(stepTitle(s));
  const name = String(s.shortcut);
  const all = ctx.env.app.shortcuts ?? [];
  const type = s.message !== undefined ? 'ON_MESSAGE' : 'GLOBAL';
  const sc = all.find((x) => x.shortcutType === type && (x.name === name || x.displayName === name));
  if (!sc) {
    const other = all.find((x) => x.name === name || x.displayName === name);
    throw new StepFailed(
      other
        ? `${name} is a ${other.shortcutType === 'GLOBAL' ? 'global shortcut: leave message out' : 'message shortcut: say which message with message'}`
        : `the app has no ${type === 'GLOBAL' ? 'global' : 'message'} shortcut ${JSON.stringify(name)} (it has ${
            all
              .filter((x) => x.shortcutType === type)
              .map((x) => x.name)
              .join(', ') || 'none'
          })`,
    );
  }
  const body: Obj = {
    kind: type === 'GLOBAL' ? 'global-shortcut' : 'message-shortcut',
    shortcut: sc.name,
    channelId: ctx.channelId,
  };
  if (s.message !== undefined) {
    const m = await namedMessage(ctx, s, s.message);
    Object.assign(body, { messageId: m.id, channelId: m.channelId });
  }
  return send(ctx, s, body, `the shortcut ${sc.name}`);
}

async function menu(ctx: TestContext, s: Resolved<MenuStep>): Promise<unknown> {
  await ctx.beginAction(stepTitle(s));
  const body: Obj = {
    kind: 'dynamic-menu',
    onAction: String(s.menu),
    query: typeof s.query === 'string' ? s.query : '',
  };
  if (s.message !== undefined)
    Object.assign(body, { sourceType: 'MESSAGE', sourceId: (await namedMessage(ctx, s, s.message)).id });
  return send(ctx, s, body, `the menu ${String(s.menu)}`);
}

async function event(ctx: TestContext, s: Resolved<EventStep>): Promise<unknown> {
  await ctx.beginAction(stepTitle(s));
  const d = await refusedAs(
    `the event ${String(s.event)}`,
    ctx.env.api.trigger({
      appId: ctx.env.app.id,
      kind: 'event',
      event: String(s.event),
      channelId: ctx.channelId,
      ...(s.body !== undefined ? { body: s.body } : {}),
    }),
  );
  ctx.called(d);
  return d;
}

async function react(ctx: TestContext, s: Resolved<ReactStep>): Promise<unknown> {
  await ctx.beginAction(stepTitle(s));
  const target = s.message !== undefined ? await namedMessage(ctx, s, s.message) : ctx.lastSaid;
  if (!target)
    throw new StepFailed('no message to react to: name one with message (nothing was said in this test yet)');
  const code = String(s.react).replace(/^:?([^:]+):?$/, ':$1:');
  await refusedAs('the reaction', ctx.env.api.react(await ctx.clientOf(s.as), target.id, code));
  return { message: target, code };
}

/** Run an action step: the one of its kind (a step has one action key). */
export function runAction(ctx: TestContext, s: Resolved<ActionStep>): Promise<unknown> {
  if ('say' in s) return say(ctx, s);
  if ('click' in s) return click(ctx, s);
  if ('select' in s) return select(ctx, s);
  if ('date' in s) return date(ctx, s);
  if ('enter' in s) return enter(ctx, s);
  if ('submit' in s) return submit(ctx, s);
  if ('close' in s) return close(ctx, s);
  if ('shortcut' in s) return shortcut(ctx, s);
  if ('menu' in s) return menu(ctx, s);
  if ('event' in s) return event(ctx, s);
  if ('react' in s) return react(ctx, s);
  // a kind the schema has and steps.ts lacks: the two are changed together
  const unknownKind: never = s;
  throw new Error(`internal: no runner for the step ${JSON.stringify(unknownKind)}`);
}
