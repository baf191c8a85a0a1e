/**
 * The workspace: the channels the person can see, a channel's messages (or a
 * thread), the composer, an app's messages rendered from their blocks, and the view (modal) an
 * app opened. The timeline is rendered by the same function for the page and the live stream.
 */
import { html } from 'ghtml';
import type { Picked } from './block-elements.js';
import { renderAttachments, renderBlocks, type BlockContext } from './blocks.js';
import { consolePage, csrfField, type Shell } from './layout.js';
import { glyphOf, REACT_CHOICES } from './emoji.js';

/** One emoji's reactions on a message: how many, who (names), and whether the person is one of them. */
export interface ReactionSummary {
  code: string;
  count: number;
  who: string[];
  mine: boolean;
}

export interface TimelineItem {
  id: string;
  author: string;
  /** Posted by an app (its bot), or a note from an app. */
  app: boolean;
  atMilli: number;
  text: string;
  blocks: unknown[];
  attachments: unknown[];
  files: Array<{ name: string; mimeType: string }>;
  /** Only the person sees it. */
  ephemeral: boolean;
  edited?: boolean;
  /** A thread root's replies, with the thread's page. */
  replies?: { count: number; href: string };
  /** Where its actions post (an app's message), if it has any. */
  actionUrl?: string;
  /** Where its message shortcuts post (a message, not a note). */
  shortcutUrl?: string;
  /** What the person last chose in its elements (checkboxes, dates, …), shown again. */
  picked?(onAction: string, key: string): Picked | undefined;
  /** Its reactions, by emoji in the order they were first given. */
  reactions?: ReactionSummary[];
  /** Where the person's reaction is posted (added, or taken back when it is theirs): a message, not a note. */
  reactUrl?: string;
}

/** A shortcut offered in a menu: the button's value names the app and the shortcut. */
export interface ShortcutChoice {
  value: string;
  label: string;
}

export interface TimelineContext extends Omit<BlockContext, 'idPrefix' | 'action' | 'inView' | 'picked'> {
  messageShortcuts: ShortcutChoice[];
  /** The channel is archived: reactions are shown, not given. */
  archived?: boolean;
}

/**
 * A message's reactions: each emoji with its count, who reacted in its title, as a button that adds
 * the person's reaction or takes it back (pressed when it is theirs); and, for the message's meta
 * line, a menu of emoji to add one. Shown, not given, in an archived channel.
 */
function reactions(m: TimelineItem, csrf: string, archived: boolean): { row: string; add: string } {
  const given = m.reactions ?? [];
  const url = archived ? undefined : m.reactUrl;
  const one = (r: ReactionSummary) => {
    const title = `${r.who.join(', ')} reacted with ${r.code}`;
    const label = `${glyphOf(r.code)} ${r.count}`;
    return url
      ? html`<button type="submit" name="code" value="${r.code}" class="reaction" title="${title}" aria-pressed="${r.mine ? 'true' : 'false'}">${label}</button>`
      : html`<span class="badge reaction" title="${title}">${label}</span>`;
  };
  const shown = given.map(one).join('');
  const row = !given.length
    ? ''
    : url
      ? html`<form method="post" action="${url}" class="reactions" role="group" aria-label="Reactions">!${csrfField(csrf)}!${shown}</form>`
      : html`<div class="reactions" role="group" aria-label="Reactions">!${shown}</div>`;
  const add = url
    ? html`<details class="react"><summary><span aria-hidden="true">☺+</span><span class="sr">Add a reaction</span></summary><form method="post" action="${url}">!${csrfField(csrf)}!${REACT_CHOICES.map(
        (code) =>
          html`<button type="submit" name="code" value="${code}" title="${code}" aria-label="React with ${glyphOf(code)}">${glyphOf(code)}</button>`,
      ).join('')}</form></details>`
    : '';
  return { row, add };
}

function menu(summary: string, action: string, csrf: string, choices: ShortcutChoice[], cls: string): string {
  return html`<details class="${cls}"><summary>!${summary}</summary><form method="post" action="${action}"><input type="hidden" name="csrf" value="${csrf}"><ul class="plain">!${choices
    .map((c) => html`<li><button type="submit" name="shortcut" value="${c.value}">${c.label}</button></li>`)
    .join('')}</ul></form></details>`;
}

const time = (ms: number) => {
  const iso = new Date(ms).toISOString();
  return html`<time datetime="${iso}">${iso.slice(11, 16)}</time>`;
};

function item(m: TimelineItem, c: BlockContext, t: TimelineContext): string {
  const ctx: BlockContext = {
    ...c,
    action: m.actionUrl,
    idPrefix: `m-${m.id}`,
    ...(m.picked ? { picked: m.picked } : {}),
  };
  const body = Array.isArray(m.blocks) && m.blocks.length ? renderBlocks(m.blocks, ctx) : html`<p>${m.text}</p>`;
  const files = m.files.length
    ? html`<ul class="plain files" aria-label="Files">!${m.files.map((f) => html`<li>File: ${f.name} <span class="muted">${f.mimeType}</span></li>`).join('')}</ul>`
    : '';
  const more =
    m.shortcutUrl && t.messageShortcuts.length
      ? menu(
          html`<span class="sr">Message actions</span><span aria-hidden="true">⋯</span>`,
          m.shortcutUrl,
          c.csrf,
          t.messageShortcuts,
          'more',
        )
      : '';
  const r = reactions(m, c.csrf, !!t.archived);
  return html`<li id="m-${m.id}" class="msg${m.ephemeral ? ' eph' : ''}">!${more}<div class="meta"><strong>${m.author}</strong>!${m.app ? ' <span class="badge">app</span>' : ''} !${time(m.atMilli)}!${m.edited ? ' <span class="muted">(edited)</span>' : ''}!${
    m.ephemeral ? ' <span class="badge eph-mark">Only visible to you</span>' : ''
  }!${r.add}</div>!${body}!${renderAttachments(m.attachments, ctx)}!${files}!${r.row}!${m.replies ? html`<p class="muted"><a href="${m.replies.href}">${m.replies.count ? `${m.replies.count} ${m.replies.count === 1 ? 'reply' : 'replies'}` : 'Reply in thread'}</a></p>` : ''}</li>`;
}

/** The list of messages (also sent by the live stream). */
export function timeline(items: TimelineItem[], c: TimelineContext): string {
  if (!items.length) return '<li class="muted" id="empty">No messages yet. Say something below.</li>';
  return items.map((m) => item(m, { csrf: c.csrf, userName: c.userName, idPrefix: 'x' }, c)).join('');
}

/** A channel as the navigation and the page name it; an archived one is marked, and nobody posts in it. */
interface ChannelLabel {
  id: string;
  label: string;
  archived?: boolean;
}

const archivedMark = (ch: ChannelLabel, text: string) => (ch.archived ? html` <span class="badge">${text}</span>` : '');

export interface WorkspaceView {
  channels: ChannelLabel[];
  channel: ChannelLabel;
  /** A thread's page: its root id and the channel's page. */
  thread?: { rootId: string; back: string };
  items: TimelineItem[];
  commands: Array<{ command: string; hint: string }>;
  /** Global shortcuts of the apps, and message shortcuts (offered in each message's menu). */
  shortcuts: ShortcutChoice[];
  messageShortcuts: ShortcutChoice[];
  /** Apps with a home view. */
  homes: Array<{ appId: string; label: string; current?: boolean }>;
  stream: string;
  userName(id: string): string;
  error?: string;
  modal?: { html: string };
}

export function workspacePage(shell: Shell, v: WorkspaceView): string {
  const nav = html`<nav aria-label="Channels" class="channels"><h2>Channels</h2><ul class="plain">!${v.channels
    .map(
      (ch) =>
        html`<li><a href="/console/channels/${encodeURIComponent(ch.id)}"!${ch.id === v.channel.id ? ' aria-current="page"' : ''}>${ch.label}!${archivedMark(ch, 'archived')}</a></li>`,
    )
    .join('')}</ul>!${homesNav(v.homes)}<p><a href="/console/manage">Channels and groups</a></p></nav>`;
  const action = `/console/channels/${encodeURIComponent(v.channel.id)}/messages`;
  const archived = !!v.channel.archived;
  const placeholder = archived
    ? `${v.channel.label} is archived: nobody can post in it`
    : `${v.thread ? 'Reply in the thread' : `Message ${v.channel.label}`}, or /command`;
  const hint = archived
    ? 'This channel is archived: its messages are kept, and no message or command can be sent in it.'
    : v.commands.length
      ? `Commands: ${v.commands.map((c) => c.command).join(', ')}.`
      : 'No app with a command is installed here.';
  const off = archived ? ' disabled' : '';
  const composer = html`<form method="post" action="${action}" class="composer" aria-label="Composer">!${csrfField(shell.csrf)}!${v.thread ? html`<input type="hidden" name="threadRootId" value="${v.thread.rootId}">` : ''}
<label for="message" class="sr">Message</label><input type="text" id="message" name="text" autocomplete="off" required placeholder="${placeholder}" aria-describedby="composer-hint"!${off}><button type="submit" class="primary"!${off}>Send</button></form>
<p class="muted" id="composer-hint">${hint}</p>
<div id="suggest" class="row" role="group" aria-label="Commands" hidden>!${v.commands.map((c) => html`<button type="button" data-command="${c.command}">${c.command}!${c.hint ? html` <span class="muted">${c.hint}</span>` : ''}</button>`).join('')}</div>`;
  const title = v.thread ? `Thread in ${v.channel.label}` : v.channel.label;
  const c = { csrf: shell.csrf, userName: v.userName, messageShortcuts: v.messageShortcuts, archived };
  const shortcuts = v.shortcuts.length
    ? menu(
        'Shortcuts',
        `/console/channels/${encodeURIComponent(v.channel.id)}/shortcuts`,
        shell.csrf,
        v.shortcuts,
        'menu',
      )
    : '';
  return consolePage(
    title,
    shell,
    html`<div class="workspace"${v.modal ? ' inert' : ''}>!${nav}<section class="card channel" aria-labelledby="channel-title"><div class="row"><h1 id="channel-title">${title}!${archivedMark(v.channel, 'Archived')}</h1>!${shortcuts}</div>!${v.thread ? html`<p><a href="${v.thread.back}">Back to ${v.channel.label}</a></p>` : ''}
!${v.error ? html`<p class="error" role="alert">${v.error}</p>` : ''}<p class="live" id="ws-status" role="status" aria-live="polite"></p>
<div class="scrollback"><ol class="plain timeline" id="timeline" aria-label="Messages" data-stream="${v.stream}">!${timeline(v.items, c)}</ol></div>!${composer}</section></div>!${v.modal ? v.modal.html : ''}`,
  );
}

function homesNav(homes: WorkspaceView['homes']): string {
  if (!homes.length) return '';
  return html`<h2>Apps</h2><ul class="plain">!${homes.map((h) => html`<li><a href="/console/home/${encodeURIComponent(h.appId)}"!${h.current ? ' aria-current="page"' : ''}>${h.label}</a></li>`).join('')}</ul>`;
}

/**
 * An app's home view for the person: its blocks in one form (a view: its input blocks are its
 * state), whose actions go to the app as BLOCK_INTERACTION from a VIEW. It has nothing to
 * submit: Enter in a field does nothing (the form's first button is disabled), rather than
 * pressing some block's button.
 */
export function homePage(
  shell: Shell,
  v: Pick<WorkspaceView, 'channels' | 'homes' | 'userName' | 'modal'> & {
    title: string;
    view: Record<string, unknown>;
    action: string;
    picked?: TimelineItem['picked'];
  },
): string {
  const nav = html`<nav aria-label="Channels" class="channels"><h2>Channels</h2><ul class="plain">!${v.channels.map((ch) => html`<li><a href="/console/channels/${encodeURIComponent(ch.id)}">${ch.label}!${archivedMark(ch, 'archived')}</a></li>`).join('')}</ul>!${homesNav(v.homes)}</nav>`;
  const body = renderBlocks(
    v.view.blocks,
    {
      csrf: shell.csrf,
      idPrefix: 'home',
      userName: v.userName,
      inView: true,
      ...(v.picked ? { picked: v.picked } : {}),
    },
    v.view.state,
  );
  return consolePage(
    v.title,
    shell,
    html`<div class="workspace"${v.modal ? ' inert' : ''}>!${nav}<section class="card channel" aria-labelledby="home-title"><h1 id="home-title">${v.title}</h1><form method="post" action="${v.action}" class="msg">!${csrfField(shell.csrf)}<button type="submit" hidden disabled tabindex="-1"></button>!${body}</form></section></div>!${v.modal ? v.modal.html : ''}`,
  );
}

/**
 * An app's view (a modal) over the page: its blocks and inputs in one form; Submit and Close.
 * Enter in a field submits the view (the form's first, hidden button), not a block's button.
 */
export function modalHtml(
  view: Record<string, unknown>,
  csrf: string,
  userName: (id: string) => string,
  picked?: TimelineItem['picked'],
): string {
  const id = String(view.id ?? '');
  // a text object ({type, text}) of the view, or its text as a string
  const textOf = (v: object): unknown => ('text' in v ? v.text : undefined);
  const title =
    typeof view.title === 'object' && view.title ? String(textOf(view.title) ?? '') : String(view.title ?? '');
  const label = (v: unknown, dflt: string) => (v && typeof v === 'object' ? String(textOf(v) ?? dflt) : dflt);
  const c: BlockContext = { csrf, idPrefix: `v-${id}`, userName, inView: true, ...(picked ? { picked } : {}) };
  return html`<div class="backdrop"><div class="modal card" role="dialog" aria-modal="true" aria-labelledby="modal-title" id="modal"><form method="post" action="/console/views/${encodeURIComponent(id)}">!${csrfField(csrf)}<button type="submit" name="do" value="submit" hidden tabindex="-1"></button>
<h2 id="modal-title">${title || 'App'}</h2>!${renderBlocks(view.blocks, c, view.state)}
<div class="row"><button type="submit" name="do" value="submit" class="primary">${label(view.submit, 'Submit')}</button><button type="submit" name="do" value="close" formnovalidate>${label(view.close, 'Close')}</button></div></form></div></div>`;
}
