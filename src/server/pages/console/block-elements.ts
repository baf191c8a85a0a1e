/**
 * The interactive elements of blocks (the SDK's docs/interactive-elements-reference.md and the
 * Actions and Input blocks of docs/blocks.md) as console controls: buttons (with a URL, a style,
 * a confirmation), static and dynamic select menus, checkbox groups, date pickers, date-range
 * pickers and plain-text inputs.
 *
 * Three places hold them:
 * - an app's message (or ephemeral message): each element is its own small form posting to the
 *   message's actions; the value is the field `v`, and the button `act` says which element it is;
 * - a view (a modal, an app's home): the whole view is one form; an input block's control is
 *   named `s.<blockId>.<onAction>` (read back as the view's state), an actions block's control
 *   gets a name of its own, and `act` names the field its value is in;
 * - anywhere else (a person's message carrying blocks): shown, disabled.
 * `act` is JSON: {onAction, type (the BLOCK_INTERACTION actionType), value? (a button's),
 * from? (the field holding the value), h (the element's key, see elementKey)}.
 */
import { html } from 'ghtml';
import crypto from 'node:crypto';
import { must } from '../../../must.js';
import { stringOr, fieldsOf as obj, itemsOf as arr } from '../../../unknown-values.js';

export type Obj = Record<string, unknown>;

/** What the person last chose in an element (kept so the page shows it again): `{value}` or `{values}`. */
export interface Picked {
  value?: string;
  values?: string[];
}

export interface ElementContext {
  /** Where a message's elements post (each element its own form). */
  action?: string;
  /** Inside a view's one form. */
  inView?: boolean;
  csrf: string;
  /** Unique ids for labels within the page. */
  idPrefix: string;
  /** What the person last chose in the element `onAction` whose key is `key`, if any. */
  picked?(onAction: string, key: string): Picked | undefined;
}

/** A text object ({type, text}) or a string. */
export const txt = (v: unknown): string => (typeof v === 'string' ? v : (stringOr(obj(v).text) ?? ''));
export const safeUrl = (u: unknown) => (typeof u === 'string' && /^(https?:|mailto:)/i.test(u) ? u : undefined);
const onActionOf = (el: Obj) => String(el.onAction ?? el.action_id ?? '');

/**
 * An element's key: a digest of the element as the app sent it. A choice kept for an element is
 * shown only while the element is the same, so an app that replaces its message starts afresh.
 */
const elementKey = (el: Obj): string =>
  crypto.createHash('sha256').update(JSON.stringify(el)).digest('base64url').slice(0, 12);

let counter = 0;
export const nextId = (c: { idPrefix: string }) => `${c.idPrefix}-${(counter++ % 1_000_000).toString(36)}`;

interface Option {
  label: string;
  value: string;
  description?: string;
  group?: string;
}

function optionsOf(el: Obj): Option[] {
  const one = (o: unknown, group?: string): Option => ({
    label: txt(obj(o).text),
    value: String(obj(o).value ?? ''),
    ...(txt(obj(o).description) ? { description: txt(obj(o).description) } : {}),
    ...(group ? { group } : {}),
  });
  const groups = arr(el.option_groups).flatMap((g) => arr(obj(g).options).map((o) => one(o, txt(obj(g).label))));
  return [...arr(el.options).map((o) => one(o)), ...groups];
}

function selectOptions(el: Obj, selected: string | undefined): string {
  const initial = obj(el.initial_option);
  const chosen = selected ?? (typeof initial.value === 'string' ? initial.value : undefined);
  const opts = optionsOf(el);
  const label = (o: Option) =>
    `${o.group ? `${o.group}: ` : ''}${o.label}${o.description ? ` — ${o.description}` : ''}`;
  return html`<option value="">${txt(el.placeholder) || 'Choose…'}</option>!${opts.map((o) => html`<option value="${o.value}"${o.value === chosen ? ' selected' : ''}>${label(o)}</option>`).join('')}`;
}

const isDate = (v: unknown): v is string => typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v);
const initialRange = (el: Obj): [string, string] => {
  const r = obj(el.initial_date_range);
  return [isDate(r.start) ? r.start : '', isDate(r.end) ? r.end : ''];
};
const buttonClass = (style: unknown) =>
  style === 'primary' ? 'primary' : style === 'danger' ? 'danger' : style === 'warning' ? 'warning' : '';

/**
 * The button that sends an element's interaction. With a `confirm` dialog it only opens the
 * dialog (a popover: no script needed), whose confirm button sends it.
 */
function sendButton(
  el: Obj,
  c: ElementContext,
  id: string,
  label: string,
  act: string,
  cls = '',
  labelHtml = html`${label}`,
): string {
  const novalidate = c.inView ? ' formnovalidate' : '';
  const klass = cls ? html` class="${cls}"` : '';
  const confirm = obj(el.confirm);
  if (!Object.keys(confirm).length)
    return html`<button type="submit" id="${id}" name="act" value="${act}"!${klass}!${novalidate}>!${labelHtml}</button>`;
  const dialog = `${id}-confirm`;
  const ok = buttonClass(confirm.style) || 'primary';
  return html`<button type="button" id="${id}" popovertarget="${dialog}"!${klass}>!${labelHtml}</button><div popover id="${dialog}" class="confirm card" role="alertdialog" aria-labelledby="${dialog}-t"><p id="${dialog}-t"><strong>${txt(confirm.title) || 'Are you sure?'}</strong></p>!${
    txt(confirm.text) ? html`<p>${txt(confirm.text)}</p>` : ''
  }<div class="row"><button type="submit" name="act" value="${act}" class="${ok}"!${novalidate}>${txt(confirm.confirm) || txt(confirm.accept) || 'Confirm'}</button><button type="button" popovertarget="${dialog}" popovertargetaction="hide">${txt(confirm.deny) || 'Cancel'}</button></div></div>`;
}

/** The act of an element: what the server reads to build the BLOCK_INTERACTION. */
const actOf = (el: Obj, type: string, extra: Obj = {}) =>
  JSON.stringify({ onAction: onActionOf(el), type, ...extra, h: elementKey(el) });

/** The control of one element and its send button; `field` names the control, `now` is what it shows. */
function control(
  el: Obj,
  c: ElementContext,
  field: string,
  now: Picked | undefined,
  o: { label?: string; required?: boolean; dispatch: boolean; describedBy?: string },
  id = nextId(c),
): string {
  const name = field;
  const req = `${o.required ? ' required' : ''}${o.describedBy ? html` aria-describedby="${o.describedBy}" aria-invalid="true"` : ''}`;
  const off = !c.action && !c.inView ? ' disabled' : '';
  const autofocus = c.inView && el.autofocused === true ? ' autofocus' : '';
  const srLabel = (text: string, forId = id) =>
    o.label === undefined ? html`<label for="${forId}" class="sr">${text}</label>` : '';
  const send = (label: string, type: string, cls = '') =>
    o.dispatch && !off
      ? sendButton(
          el,
          c,
          `${id}-go`,
          label,
          actOf(el, type, { from: field }),
          cls,
          html`${label}!${o.label ? html`<span class="sr"> ${o.label}</span>` : ''}`,
        )
      : '';
  const submitsAtOnce = o.dispatch && !off ? html` data-submit="${id}-go"` : '';
  switch (el.type) {
    case 'button': {
      const text = txt(el.text) || onActionOf(el);
      const url = safeUrl(el.url);
      // a link button opens its URL; the script also sends the interaction when it has an onAction
      if (url)
        return html`<a class="button" href="${url}" rel="noopener noreferrer" target="_blank"!${onActionOf(el) && !off ? html` data-act="${actOf(el, 'BUTTON', { value: el.value ?? '' })}"` : ''}>${text}</a>`;
      if (off) return html`<button type="button" disabled>${text}</button>`;
      return sendButton(el, c, id, text, actOf(el, 'BUTTON', { value: el.value ?? '' }), buttonClass(el.style));
    }
    case 'static_select_menu': {
      const label = txt(el.placeholder) || onActionOf(el);
      return html`<span class="pick">!${srLabel(label)}<select id="${id}" name="${name}"!${c.inView && o.label !== undefined ? ' class="wide"' : ''}!${submitsAtOnce}!${req}!${autofocus}!${off}>!${selectOptions(el, now?.value)}</select>!${send('Choose', 'STATIC_SELECT_MENU')}</span>`;
    }
    case 'dynamic_select_menu': {
      // a combobox: the script asks the app (through the daemon) for the options of what is typed,
      // shows them in the listbox, and puts the one chosen in the hidden field the form sends
      const label = txt(el.placeholder) || onActionOf(el);
      const initial = obj(el.initial_option);
      // the view's state is shown (an input block's value); a choice made in a message is not (its label is the app's)
      const kept = o.label !== undefined ? now?.value : undefined;
      const value = kept ?? (typeof initial.value === 'string' ? initial.value : '');
      const shown = value && value === initial.value ? txt(initial.text) || value : value;
      return html`<span class="pick combo">!${srLabel(label)}<input type="text" id="${id}" role="combobox" aria-autocomplete="list" aria-expanded="false" aria-controls="${id}-list" autocomplete="off" spellcheck="false" placeholder="${label}" value="${shown}" data-menu="${onActionOf(el)}" data-value="${id}-v"!${shown ? html` data-chosen="${shown}"` : ''}!${c.inView && o.label !== undefined ? ' class="wide"' : ''}!${submitsAtOnce}!${req}!${autofocus}!${off}><input type="hidden" id="${id}-v" name="${name}" value="${value}"><ul role="listbox" id="${id}-list" class="listbox" aria-label="${o.label ?? label}" hidden></ul>!${send('Choose', 'DYNAMIC_SELECT_MENU')}</span>`;
    }
    case 'checkboxes': {
      const on = new Set((now?.values ?? arr(el.initial_options).map((x) => String(obj(x).value ?? ''))).map(String));
      const boxes = optionsOf(el)
        .map(
          (x, i) =>
            html`<label class="check"><input type="checkbox" name="${name}" value="${x.value}" id="${id}-${i}"${on.has(x.value) ? ' checked' : ''}!${submitsAtOnce}!${i === 0 ? autofocus : ''}!${off}> ${x.label}!${x.description ? html` <span class="muted">${x.description}</span>` : ''}</label>`,
        )
        .join('');
      return html`<fieldset class="checks"><legend!${o.label === undefined ? ' class="sr"' : ''}>${o.label ?? (txt(el.placeholder) || 'Options')}!${o.label !== undefined && !o.required ? ' <span class="muted">(optional)</span>' : ''}</legend>!${boxes}</fieldset>!${send('Apply', 'CHECKBOXES')}`;
    }
    case 'date_picker': {
      const value = now?.value ?? (isDate(el.initial_date) ? el.initial_date : '');
      return html`<span class="pick">!${srLabel(txt(el.placeholder) || 'Date')}<input type="date" id="${id}" name="${name}" value="${value}"!${req}!${autofocus}!${off}>!${send('Choose', 'DATE_PICKER')}</span>`;
    }
    case 'date_range_picker': {
      const [start, end] = now?.values?.length === 2 ? [must(now.values[0]), must(now.values[1])] : initialRange(el);
      const what = txt(el.placeholder) || o.label || 'Dates';
      return html`<span class="pick range"><label for="${id}-s" class="small">From<span class="sr"> (${what})</span></label><input type="date" id="${id}-s" name="${name}" value="${start}"!${req}!${autofocus}!${off}><label for="${id}-e" class="small">to<span class="sr"> (${what})</span></label><input type="date" id="${id}-e" name="${name}" value="${end}"!${req}!${off}>!${send('Choose', 'DATE_RANGE_PICKER')}</span>`;
    }
    case 'plain_text_input': {
      const value = now?.value ?? String(el.initial_value ?? '');
      const max = Number.isInteger(el.max_length) ? html` maxlength="!${el.max_length}"` : '';
      const min = Number.isInteger(el.min_length) ? html` minlength="!${el.min_length}"` : '';
      const ph = txt(el.placeholder) ? html` placeholder="${txt(el.placeholder)}"` : '';
      const triggers = arr(el.interaction_triggers);
      // Enter sends (on_enter_pressed, or in a message where there is nothing else to do); on_input is sent on Enter
      // too
      const enter = o.dispatch && !off && (!c.inView || triggers.length > 0) ? html` data-enter="${id}-go"` : '';
      const multiline = el.line_mode === 'multiline' || el.multiline === true;
      const field = multiline
        ? html`<textarea id="${id}" name="${name}" class="short"!${ph}!${max}!${min}!${req}!${autofocus}!${off}>${value}</textarea>`
        : html`<input type="text" id="${id}" name="${name}" value="${value}"!${ph}!${max}!${min}!${req}!${autofocus}!${enter}!${off}>`;
      return html`<span class="pick text">!${srLabel(txt(el.placeholder) || onActionOf(el) || 'Text')}!${field}!${send('Send', 'PLAIN_TEXT_INPUT')}</span>`;
    }
    default:
      return html`<span class="muted">(${el.type})</span>`;
  }
}

/** One element of an actions block: in a message its own form, in a view part of the view's form. */
export function actionElement(el: Obj, c: ElementContext): string {
  const key = elementKey(el);
  const now = c.picked?.(onActionOf(el), key);
  if (c.action)
    return html`<form method="post" action="${c.action}" class="el"><input type="hidden" name="csrf" value="${c.csrf}">!${control(el, c, 'v', now, { dispatch: true })}</form>`;
  return html`<span class="el">!${control(el, c, `a.${nextId(c)}`, now, { dispatch: true })}</span>`;
}

/**
 * The control of an input block (in a view), named for the view's state and showing it (else the
 * element's initial value). With `dispatchAction`, a change is also sent to the app at once.
 * `describedBy` names the block's validation error.
 */
export function inputElement(
  blockId: string,
  el: Obj,
  c: ElementContext,
  label: string,
  optional: boolean,
  state: Obj,
  dispatch: boolean,
  describedBy?: string,
): string {
  const field = `s.${blockId}.${onActionOf(el)}`;
  const inView = { ...c, inView: true };
  if (el.type === 'button') return control(el, inView, field, undefined, { dispatch: true });
  const now = obj(obj(state[blockId])[onActionOf(el)]);
  const shown: Picked | undefined = Array.isArray(now.values)
    ? { values: now.values.map(String) }
    : typeof now.value === 'string'
      ? { value: now.value }
      : undefined;
  const id = nextId(c);
  const rendered = control(
    el,
    inView,
    field,
    shown,
    { label, required: !optional, dispatch, ...(describedBy ? { describedBy } : {}) },
    id,
  );
  if (el.type === 'checkboxes') return rendered; // its fieldset's legend is the label
  const forId = el.type === 'date_range_picker' ? `${id}-s` : id;
  return html`<label for="${forId}">${label}!${optional ? ' <span class="muted">(optional)</span>' : ''}</label>!${rendered}`;
}
