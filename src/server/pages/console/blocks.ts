/**
 * Blocks as the platform's client shows them (the SDK's docs/blocks.md): rich text, sections
 * (their accessory an input block or an element), actions, inputs (in views), dividers,
 * context, images (shown as links, img-src stays 'none'), headers; and message attachments,
 * with their own blocks. Everything an app sent is escaped here. The interactive elements are
 * block-elements.ts: in a message each is a small form of its own, in a view (a modal, an app's
 * home) they are all part of the view's one form and input blocks are read back as its state.
 */
import { html } from 'ghtml';
import { actionElement, inputElement, nextId, safeUrl, txt, type ElementContext, type Obj } from './block-elements.js';
import { fieldsOf as obj, itemsOf as arr } from '../../../unknown-values.js';

export interface BlockContext extends ElementContext {
  /** A user's name, for mentions. */
  userName(id: string): string;
}

const link = (url: unknown, label: string) => {
  const u = safeUrl(url);
  return u ? html`<a href="${u}" rel="noopener noreferrer" target="_blank">${label || u}</a>` : html`${label}`;
};

function styled(text: string, style: Obj): string {
  let out = html`${text}`;
  if (style.code) out = html`<code>!${out}</code>`;
  if (style.bold) out = html`<strong>!${out}</strong>`;
  if (style.italic) out = html`<em>!${out}</em>`;
  if (style.strike) out = html`<s>!${out}</s>`;
  return out;
}

function inline(e: Obj, c: BlockContext): string {
  switch (e.type) {
    case 'text':
      return styled(String(e.text ?? ''), obj(e.style));
    case 'link':
      return link(e.url, String(e.text ?? e.url ?? ''));
    case 'emoji':
      return html`<span class="emoji">:${e.name}:</span>`;
    case 'user':
      return html`<span class="mention">@${c.userName(String(e.user_id ?? ''))}</span>`;
    case 'channel':
      return html`<span class="mention">#${e.channel_id}</span>`;
    case 'usergroup':
      return html`<span class="mention">@${e.usergroup_id}</span>`;
    case 'broadcast':
      return html`<span class="mention">@${e.range}</span>`;
    default:
      return html`${e.text ?? ''}`;
  }
}

function richSection(s: Obj, c: BlockContext): string {
  const inner = arr(s.elements)
    .map((e) => inline(obj(e), c))
    .join('');
  switch (s.type) {
    case 'rich_text_preformatted':
      return html`<pre>!${arr(s.elements)
        .map((e) => html`${obj(e).text}`)
        .join('')}</pre>`;
    case 'rich_text_quote':
      return html`<blockquote>!${inner}</blockquote>`;
    case 'rich_text_list': {
      const tag = s.style === 'ordered' ? 'ol' : 'ul';
      return html`<!${tag}>!${arr(s.elements)
        .map((x) => html`<li>!${richSection({ ...obj(x), type: 'rich_text_section' }, c)}</li>`)
        .join('')}</!${tag}>`;
    }
    default:
      return html`<p>!${inner}</p>`;
  }
}

/** An input block (or a section's accessory that is one): its control named for the view's state. */
function inputBlock(b: Obj, c: BlockContext, state: Obj): string {
  const blockId = String(b.blockId ?? b.block_id ?? '');
  const problem = typeof b.validationError === 'string' && b.validationError ? b.validationError : '';
  const problemId = problem ? nextId(c) : undefined;
  return html`<div class="input">!${inputElement(blockId, obj(b.element), c, txt(b.label), b.optional === true, state, b.dispatchAction === true, problemId)}!${problem ? html`<p class="error" id="${problemId}">${problem}</p>` : ''}!${txt(b.hint) ? html`<p class="muted">${txt(b.hint)}</p>` : ''}</div>`;
}

function block(b: Obj, c: BlockContext, state: Obj): string {
  switch (b.type) {
    case 'rich_text':
      return html`<div class="rich">!${arr(b.elements)
        .map((s) => richSection(obj(s), c))
        .join('')}</div>`;
    case 'section': {
      const fields = arr(b.fields)
        .map((f) => html`<div>${txt(f)}</div>`)
        .join('');
      const accessory = obj(b.accessory);
      // docs/blocks.md: the accessory is an input block (part of the view's state); an element alone acts like one in
      // an actions block
      const acc = !b.accessory
        ? ''
        : accessory.type === 'input'
          ? inputBlock(accessory, c, state)
          : html`<div class="row actions">!${actionElement(accessory, c)}</div>`;
      const text = html`<p>${txt(b.text)}</p>!${fields ? html`<div class="fields">!${fields}</div>` : ''}`;
      return html`<div class="section${acc ? ' with-accessory' : ''}">!${(b.text_position ?? b.textPosition) === 'right' ? html`!${acc}!${text}` : html`!${text}!${acc}`}</div>`;
    }
    case 'header':
      return html`<p><strong>${txt(b.text)}</strong></p>`;
    case 'divider':
      return '<hr>';
    case 'image':
      return html`<p>!${link(b.image_url ?? b.imageUrl, `Image: ${txt(b.title) || String(b.alt_text ?? b.image_url ?? '')}`)}</p>`;
    case 'context':
      return html`<p class="muted">!${arr(b.elements)
        .map((e) =>
          obj(e).type === 'image' ? link(obj(e).image_url, `Image: ${String(obj(e).alt_text ?? '')}`) : html`${txt(e)}`,
        )
        .join(' · ')}</p>`;
    case 'actions':
      return html`<div class="row actions">!${arr(b.elements)
        .map((e) => actionElement(obj(e), c))
        .join('')}</div>`;
    case 'input':
      return inputBlock(b, c, state);
    default:
      return html`<p class="muted">(a ${b.type} block)</p>`;
  }
}

/** The blocks of a message or view; `state` is a view's state (its inputs' values). */
export function renderBlocks(blocks: unknown, c: BlockContext, state: unknown = {}): string {
  return arr(blocks)
    .map((b) => block(obj(b), c, obj(obj(state).values)))
    .join('');
}

/** An attachment's `ts` (seconds, or milliseconds) as a time; nothing when it is not one. */
function stamp(ts: unknown): string {
  if (typeof ts !== 'number' || !Number.isFinite(ts)) return '';
  const d = new Date(ts < 1e11 ? ts * 1000 : ts);
  if (Number.isNaN(d.getTime())) return '';
  const iso = d.toISOString();
  return html`<time datetime="${iso}">!${iso.slice(0, 16).replace('T', ' ')}</time>`;
}

/**
 * A message's attachments (V1.MessageAttachment): text, fields, and blocks (`blocks`, or the older `actions`) that work
 * as the message's own.
 */
export function renderAttachments(atts: unknown, c: BlockContext): string {
  return arr(atts)
    .map((x) => {
      const a = obj(x);
      const color =
        typeof a.color === 'string' && /^#?[0-9a-f]{3,8}$/i.test(a.color) ? a.color.replace(/^#?/, '#') : '';
      const ts = stamp(a.ts);
      const fields = arr(a.fields)
        .map(
          (f) =>
            html`<div!${obj(f).short ? '' : ' class="long"'}><strong>${obj(f).title}</strong><br>${obj(f).value}</div>`,
        )
        .join('');
      return html`<div class="attachment"!${color ? html` data-color="${color}"` : ''}>!${a.pretext ? html`<p>${a.pretext}</p>` : ''}!${a.author_name ? html`<p class="muted">!${link(a.author_link, String(a.author_name))}</p>` : ''}!${
        a.title ? html`<p><strong>!${link(a.title_link, String(a.title))}</strong></p>` : ''
      }!${a.text ? html`<p>${a.text}</p>` : ''}!${fields ? html`<div class="fields">!${fields}</div>` : ''}!${renderBlocks(a.blocks, c)}!${a.actions ? renderBlocks([{ type: 'actions', ...obj(a.actions) }], c) : ''}!${a.footer || ts ? html`<p class="muted">!${[a.footer ? html`${a.footer}` : '', ts].filter(Boolean).join(' · ')}</p>` : ''}</div>`;
    })
    .join('');
}
