/**
 * Blocks as the platform's client shows them (the SDK's docs/blocks.md): rich text, sections,
 * actions (buttons, static and dynamic selects), inputs (in views), dividers, context, images
 * (shown as links, img-src stays 'none'), headers; and message attachments. Everything an app
 * sent is escaped here. In a message, an actions block is one form whose buttons each say which
 * action they are (`act`, JSON); in a view, inputs are named `s.<blockId>.<onAction>` so the
 * view's state can be read back from the form.
 */
import { esc } from '../layout.js';

type Obj = Record<string, unknown>;

export interface BlockContext {
  /** Where an actions block's form posts (a message's actions), or undefined inside a view's form. */
  action?: string;
  csrf: string;
  /** Unique ids for labels within the page. */
  idPrefix: string;
  /** A user's name, for mentions. */
  userName(id: string): string;
}

const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
/** A text object ({type, text}) or a string. */
const txt = (v: unknown): string => (typeof v === 'string' ? v : typeof obj(v).text === 'string' ? (obj(v).text as string) : '');
const safeUrl = (u: unknown) => (typeof u === 'string' && /^(https?:|mailto:)/i.test(u) ? u : undefined);
const link = (url: unknown, label: string) => {
  const u = safeUrl(url);
  return u ? `<a href="${esc(u)}" rel="noopener noreferrer" target="_blank">${esc(label || u)}</a>` : esc(label);
};
const onActionOf = (el: Obj) => String(el.onAction ?? el.action_id ?? '');

function styled(text: string, style: Obj): string {
  let out = esc(text);
  if (style.code) out = `<code>${out}</code>`;
  if (style.bold) out = `<strong>${out}</strong>`;
  if (style.italic) out = `<em>${out}</em>`;
  if (style.strike) out = `<s>${out}</s>`;
  return out;
}

function inline(e: Obj, c: BlockContext): string {
  switch (e.type) {
    case 'text':
      return styled(String(e.text ?? ''), obj(e.style));
    case 'link':
      return link(e.url, String(e.text ?? e.url ?? ''));
    case 'emoji':
      return `<span class="emoji">:${esc(e.name)}:</span>`;
    case 'user':
      return `<span class="mention">@${esc(c.userName(String(e.user_id ?? '')))}</span>`;
    case 'channel':
      return `<span class="mention">#${esc(e.channel_id)}</span>`;
    case 'usergroup':
      return `<span class="mention">@${esc(e.usergroup_id)}</span>`;
    case 'broadcast':
      return `<span class="mention">@${esc(e.range)}</span>`;
    default:
      return esc(e.text ?? '');
  }
}

function richSection(s: Obj, c: BlockContext): string {
  const inner = arr(s.elements).map((e) => inline(obj(e), c)).join('');
  switch (s.type) {
    case 'rich_text_preformatted':
      return `<pre>${arr(s.elements).map((e) => esc(obj(e).text)).join('')}</pre>`;
    case 'rich_text_quote':
      return `<blockquote>${inner}</blockquote>`;
    case 'rich_text_list': {
      const tag = s.style === 'ordered' ? 'ol' : 'ul';
      return `<${tag}>${arr(s.elements).map((x) => `<li>${richSection({ ...obj(x), type: 'rich_text_section' }, c)}</li>`).join('')}</${tag}>`;
    }
    default:
      return `<p>${inner}</p>`;
  }
}

function options(el: Obj): Array<{ label: string; value: string; group?: string }> {
  const one = (o: unknown, group?: string) => ({ label: txt(obj(o).text), value: String(obj(o).value ?? ''), ...(group ? { group } : {}) });
  const groups = arr(el.option_groups).flatMap((g) => arr(obj(g).options).map((o) => one(o, txt(obj(g).label))));
  return [...arr(el.options).map((o) => one(o)), ...groups];
}

function selectOptions(el: Obj, selected?: string): string {
  const initial = selected ?? (obj(el.initial_option).value as string | undefined);
  const opts = options(el);
  return `<option value="">${esc(txt(el.placeholder) || 'Choose…')}</option>${opts.map((o) => `<option value="${esc(o.value)}"${o.value === initial ? ' selected' : ''}>${esc(o.group ? `${o.group}: ${o.label}` : o.label)}</option>`).join('')}`;
}

let counter = 0;
const nextId = (c: BlockContext) => `${c.idPrefix}-${(counter++ % 1_000_000).toString(36)}`;

/** One actionable element of an actions block (or a section's accessory). */
function actionElement(el: Obj, c: BlockContext): string {
  const on = onActionOf(el);
  const act = (type: string, extra: Obj = {}) => esc(JSON.stringify({ onAction: on, type, ...extra }));
  switch (el.type) {
    case 'button': {
      if (safeUrl(el.url)) return `<a class="button" href="${esc(el.url)}" rel="noopener noreferrer" target="_blank">${esc(txt(el.text))}</a>`;
      const cls = el.style === 'primary' ? ' class="primary"' : el.style === 'danger' ? ' class="danger"' : '';
      return `<button type="submit" name="act" value="${act('BUTTON', { value: el.value ?? '' })}"${cls}>${esc(txt(el.text) || on)}</button>`;
    }
    case 'static_select_menu':
    case 'dynamic_select_menu': {
      const id = nextId(c);
      const label = txt(el.placeholder) || on;
      const dynamic = el.type === 'dynamic_select_menu';
      return `<span class="pick"><label for="${id}" class="sr">${esc(label)}</label><select id="${id}" name="sel.${esc(on)}" data-submit="${id}-go"${dynamic ? ` data-menu="${esc(on)}"` : ''}>${selectOptions(el)}</select><button type="submit" id="${id}-go" name="act" value="${act(dynamic ? 'DYNAMIC_SELECT_MENU' : 'STATIC_SELECT_MENU', { from: `sel.${on}` })}">Choose</button></span>`;
    }
    default:
      return `<span class="muted">(${esc(el.type)})</span>`;
  }
}

/** The control of an input block in a view, named for the view's state. */
function inputElement(blockId: string, el: Obj, c: BlockContext, label: string, optional: boolean, state: Obj): string {
  const id = nextId(c);
  const name = `s.${blockId}.${onActionOf(el)}`;
  const now = obj(obj(state[blockId])[onActionOf(el)]);
  const value = typeof now.value === 'string' ? now.value : undefined;
  const lbl = `<label for="${id}">${esc(label)}${optional ? ' <span class="muted">(optional)</span>' : ''}</label>`;
  const req = optional ? '' : ' required';
  const ph = txt(el.placeholder) ? ` placeholder="${esc(txt(el.placeholder))}"` : '';
  switch (el.type) {
    case 'plain_text_input': {
      const v = value ?? String(el.initial_value ?? '');
      const max = Number.isInteger(el.max_length) ? ` maxlength="${el.max_length as number}"` : '';
      if (el.line_mode === 'multiline' || el.multiline === true) return `${lbl}<textarea id="${id}" name="${esc(name)}" class="short"${ph}${max}${req}>${esc(v)}</textarea>`;
      return `${lbl}<input type="text" id="${id}" name="${esc(name)}" value="${esc(v)}"${ph}${max}${req}>`;
    }
    case 'static_select_menu':
    case 'dynamic_select_menu':
      return `${lbl}<select id="${id}" name="${esc(name)}" class="wide"${el.type === 'dynamic_select_menu' ? ` data-menu="${esc(onActionOf(el))}"` : ''}${req}>${selectOptions(el, value)}</select>`;
    case 'date_picker':
      return `${lbl}<input type="date" id="${id}" name="${esc(name)}" value="${esc(value ?? el.initial_date ?? '')}"${req}>`;
    case 'checkboxes': {
      const on = new Set(arr(now.values ?? arr(el.initial_options).map((o) => obj(o).value)).map(String));
      return `<fieldset><legend>${esc(label)}</legend>${options(el).map((o, i) => `<label class="check"><input type="checkbox" name="${esc(name)}" value="${esc(o.value)}" id="${id}-${i}"${on.has(o.value) ? ' checked' : ''}> ${esc(o.label)}</label>`).join('')}</fieldset>`;
    }
    default:
      return `${lbl}<input type="text" id="${id}" name="${esc(name)}" value="${esc(value ?? '')}">`;
  }
}

function actionsForm(inner: string, c: BlockContext): string {
  if (!c.action) return `<div class="row">${inner}</div>`;
  return `<form method="post" action="${esc(c.action)}" class="row actions"><input type="hidden" name="csrf" value="${esc(c.csrf)}">${inner}</form>`;
}

function block(b: Obj, c: BlockContext, state: Obj): string {
  switch (b.type) {
    case 'rich_text':
      return `<div class="rich">${arr(b.elements).map((s) => richSection(obj(s), c)).join('')}</div>`;
    case 'section': {
      const fields = arr(b.fields).map((f) => `<div>${esc(txt(f))}</div>`).join('');
      const acc = b.accessory ? actionsForm(actionElement(obj(b.accessory), c), c) : '';
      return `<div class="section"><p>${esc(txt(b.text))}</p>${fields ? `<div class="fields">${fields}</div>` : ''}${acc}</div>`;
    }
    case 'header':
      return `<p><strong>${esc(txt(b.text))}</strong></p>`;
    case 'divider':
      return '<hr>';
    case 'image':
      return `<p>${link(b.image_url ?? b.imageUrl, `Image: ${txt(b.title) || String(b.alt_text ?? b.image_url ?? '')}`)}</p>`;
    case 'context':
      return `<p class="muted">${arr(b.elements).map((e) => (obj(e).type === 'image' ? link(obj(e).image_url, `Image: ${String(obj(e).alt_text ?? '')}`) : esc(txt(e)))).join(' · ')}</p>`;
    case 'actions':
      return actionsForm(arr(b.elements).map((e) => actionElement(obj(e), c)).join(''), c);
    case 'input': {
      const blockId = String(b.blockId ?? b.block_id ?? '');
      return `<div class="input">${inputElement(blockId, obj(b.element), c, txt(b.label), b.optional === true, state)}${txt(b.hint) ? `<p class="muted">${esc(txt(b.hint))}</p>` : ''}</div>`;
    }
    default:
      return `<p class="muted">(a ${esc(b.type)} block)</p>`;
  }
}

/** The blocks of a message or view; `state` is a view's state (its inputs' values). */
export function renderBlocks(blocks: unknown, c: BlockContext, state: unknown = {}): string {
  return arr(blocks).map((b) => block(obj(b), c, obj(obj(state).values))).join('');
}

/** A message's attachments (V1.MessageAttachment). */
export function renderAttachments(atts: unknown, c: BlockContext): string {
  return arr(atts)
    .map((x) => {
      const a = obj(x);
      const color = typeof a.color === 'string' && /^#?[0-9a-f]{3,8}$/i.test(a.color) ? a.color.replace(/^#?/, '#') : '';
      const fields = arr(a.fields).map((f) => `<div${obj(f).short ? '' : ' class="long"'}><strong>${esc(obj(f).title)}</strong><br>${esc(obj(f).value)}</div>`).join('');
      return `<div class="attachment"${color ? ` data-color="${esc(color)}"` : ''}>${a.pretext ? `<p>${esc(a.pretext)}</p>` : ''}${a.author_name ? `<p class="muted">${link(a.author_link, String(a.author_name))}</p>` : ''}${
        a.title ? `<p><strong>${link(a.title_link, String(a.title))}</strong></p>` : ''
      }${a.text ? `<p>${esc(a.text)}</p>` : ''}${fields ? `<div class="fields">${fields}</div>` : ''}${a.actions ? renderBlocks([{ type: 'actions', ...obj(a.actions) }], c) : ''}${a.footer ? `<p class="muted">${esc(a.footer)}</p>` : ''}</div>`;
    })
    .join('');
}
