/**
 * The delivery inspector: the live list with its filters and the test-trigger
 * form, and a delivery's page (the request as sent, the body decoded, every attempt with the
 * headers sent and answered; Replay, Edit and replay, Copy as curl). The list's rows and the
 * delivery's live part are rendered by the same functions for the page and for the live
 * stream, so an update looks exactly like a reload.
 */
import { html } from 'ghtml';
import { withFieldDecoded } from '../../../delivery/encoded-fields.js';
import type { AttemptEntry, CurlParts, DeliveryRecord } from '../../../services/deliveries.js';
import { actionForm, consolePage, csrfField, type Shell } from './layout.js';

export const STATES = ['pending', 'delivered', 'failed', 'retrying', 'cancelled'] as const;

export interface ListFilter {
  app?: string;
  kind?: string;
  state?: string;
}

const badge = (state: string) => html`<span class="badge s-${state}">${state}</span>`;
const time = (iso: string) => html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z')}</time>`;

const target = (r: DeliveryRecord) =>
  r.transport === 'socket'
    ? '<span class="muted">socket mode</span>'
    : r.url
      ? html`<code>${r.url}</code>`
      : '<span class="muted">no URL</span>';
const editedMark = (r: DeliveryRecord) => (r.editedFrom ? ' <span class="badge">edited replay</span>' : '');

/**
 * One row of the list (also sent by the live stream): when, the app, the kind and what it is about, where it went, how
 * it ended.
 */
export function deliveryRow(r: DeliveryRecord): string {
  const last = r.attempts.at(-1);
  return html`<tr id="d-${r.id}"><td><a href="/console/deliveries/${r.id}">!${time(r.createdAt)}</a></td><td>${r.appName}</td><td>${r.kind}!${r.subject ? html`<br><code>${r.subject}</code>` : ''}!${editedMark(r)}</td><td class="wide target">!${target(r)}</td><td>!${badge(r.state)}</td><td class="wide">!${r.attempts.length}!${
    last ? html` · ${last.outcome}${last.status !== undefined ? ` ${last.status}` : ''}` : ''
  }</td></tr>`;
}

export interface ListView {
  filter: ListFilter;
  rows: DeliveryRecord[];
  apps: Array<{ id: string; displayName: string }>;
  kinds: readonly string[];
  error?: string;
  /** The live stream's cursor: it sends what changed after the moment this page was rendered. */
  since?: string;
}

function select(
  id: string,
  name: string,
  label: string,
  options: Array<[string, string]>,
  selected: string | undefined,
  anyLabel?: string,
): string {
  const any: Array<[string, string]> = anyLabel !== undefined ? [['', anyLabel]] : [];
  const opts = any.concat(options);
  return html`<div><label for="${id}">!${label}</label><select id="${id}" name="${name}">!${opts.map(([v, l]) => html`<option value="${v}"${v === (selected ?? '') ? ' selected' : ''}>${l}</option>`).join('')}</select></div>`;
}

/** Many apps: a text field for the app id instead of a select of them all (the page stays small). */
function appField(
  id: string,
  name: string,
  label: string,
  apps: ListView['apps'],
  selected: string | undefined,
  anyLabel?: string,
): string {
  if (apps.length <= 200)
    return select(
      id,
      name,
      label,
      apps.map((a) => [a.id, a.displayName]),
      selected,
      anyLabel,
    );
  return html`<div><label for="${id}">!${label}</label><input type="text" id="${id}" name="${name}" value="${selected ?? ''}" placeholder="app id" autocomplete="off"></div>`;
}

export function deliveriesPage(shell: Shell, v: ListView): string {
  const f = v.filter;
  const given: Array<[string, string | undefined]> = [...Object.entries(f), ['since', v.since]];
  const q = new URLSearchParams(given.filter((p): p is [string, string] => !!p[1])).toString();
  const filters = html`<form class="filters" method="get" action="/console/deliveries" aria-label="Filter deliveries">!${appField('f-app', 'app', 'App', v.apps, f.app, 'All apps')}!${select(
    'f-kind',
    'kind',
    'Kind',
    v.kinds.map((k) => [k, k]),
    f.kind,
    'All kinds',
  )}!${select(
    'f-state',
    'state',
    'State',
    STATES.map((s) => [s, s]),
    f.state,
    'All states',
  )}<button type="submit">Filter</button></form>`;
  const trigger = html`<details class="card"${v.error ? ' open' : ''}><summary><strong>Send a test trigger</strong></summary>
<form method="post" action="/console/deliveries" aria-label="Send a test trigger">!${csrfField(shell.csrf)}
<div class="filters">!${appField('t-app', 'appId', 'App', v.apps, f.app)}!${select(
    't-kind',
    'kind',
    'Kind',
    v.kinds.map((k) => [k, k]),
    f.kind ?? 'slash-command',
  )}</div>
<div class="filters"><div><label for="t-command">Command</label><input type="text" id="t-command" name="command" placeholder="/command"></div><div><label for="t-text">Text</label><input type="text" id="t-text" name="text"></div>
<div><label for="t-shortcut">Shortcut</label><input type="text" id="t-shortcut" name="shortcut" placeholder="name"></div><div><label for="t-action">Action (onAction)</label><input type="text" id="t-action" name="onAction"></div>
<div><label for="t-value">Value</label><input type="text" id="t-value" name="value"></div><div><label for="t-event">Event</label><input type="text" id="t-event" name="event" placeholder="NEW_MESSAGE"></div>
<div><label for="t-query">Menu query</label><input type="text" id="t-query" name="query"></div>!${select(
    't-source',
    'sourceType',
    'Interaction source',
    [
      ['MESSAGE', 'message'],
      ['EPHEMERAL_MESSAGE', 'ephemeral message'],
      ['VIEW', 'view'],
    ],
    'MESSAGE',
  )}!${select(
    't-view-action',
    'viewActionType',
    'View action',
    [
      ['SUBMIT', 'submit'],
      ['CLOSE', 'close'],
    ],
    'SUBMIT',
  )}
<div><label for="t-timeout">Timeout (ms)</label><input type="number" id="t-timeout" name="timeoutMs" min="1" max="60000"></div></div>
<div class="row"><button type="submit" class="primary">Send trigger</button></div></form></details>`;
  const rows = v.rows.map(deliveryRow).join('\n');
  return consolePage(
    'Deliveries',
    shell,
    html`!${v.error ? html`<p class="error" role="alert">${v.error}</p>` : ''}!${trigger}<div class="card"><h1>Deliveries</h1>!${filters}
<p class="live" id="live" role="status" aria-live="polite" data-stream="/console/events${q ? `?${q}` : ''}">Newest first; new deliveries appear here.</p>
<div class="scroll"><table><thead><tr><th scope="col">Created</th><th scope="col">App</th><th scope="col">Kind</th><th scope="col" class="wide">Target</th><th scope="col">State</th><th scope="col" class="wide">Attempts</th></tr></thead><tbody id="rows">!${rows}</tbody></table></div>
!${v.rows.length ? '' : '<p class="muted" id="empty">No deliveries yet.</p>'}</div>`,
  );
}

const headerLines = (h: Array<[string, string]>) => html`${h.map(([k, x]) => `${k}: ${x}`).join('\n')}`;

function attemptItem(
  rec: DeliveryRecord,
  a: AttemptEntry,
  headers: Array<[string, string]> | undefined,
  newest: boolean,
): string {
  // the request's headers and the answer's, side by side (stacked on a phone); the newest attempt's open
  const pair = headers
    ? html`<details${newest ? ' open' : ''}><summary>Headers: sent and answered</summary><div class="pair"><div><h3>Sent</h3><pre class="wrap" aria-label="Headers sent">!${headerLines(headers)}</pre></div><div><h3>Answered${a.status !== undefined ? ` (${a.status})` : ''}</h3>!${
        a.answerHeaders?.length
          ? html`<pre class="wrap" aria-label="Headers answered">!${headerLines(a.answerHeaders)}</pre>`
          : '<p class="muted">No answer, or its headers were not kept for this attempt.</p>'
      }</div></div></details>`
    : '';
  return html`<li><div class="row"><strong>#!${a.retryNum + 1}</strong> !${time(a.at)} <span class="badge">${a.outcome}</span>!${a.status !== undefined ? html` <span>status !${a.status}</span>` : ''} <span class="muted">!${a.latencyMs} ms</span>!${a.replay ? ' <span class="badge">replay</span>' : ''}</div>!${
    a.message ? html`<p>The app's message: ${a.message}</p>` : ''
  }!${a.error ? html`<p class="muted">${a.error}</p>` : ''}!${a.excerpt ? html`<pre aria-label="The answer's excerpt">${a.excerpt}</pre>` : ''}!${rec.transport === 'http' ? pair : ''}</li>`;
}

/** The part of a delivery's page that changes (also sent by the live stream). */
export function deliveryLive(
  rec: DeliveryRecord,
  csrf: string,
  headersOf: (a: AttemptEntry) => Array<[string, string]>,
): string {
  const base = `/console/deliveries/${rec.id}`;
  const buttons = [
    rec.payload ? actionForm(`${base}/replay`, csrf, 'Replay', 'primary') : '',
    rec.payload && rec.transport === 'http' && rec.url ? actionForm(`${base}/curl`, csrf, 'Copy as curl') : '',
    rec.state === 'retrying' ? actionForm(`${base}/cancel`, csrf, 'Cancel', 'danger') : '',
  ].join('');
  return html`<dl><dt>State</dt><dd>!${badge(rec.state)}${rec.outcome ? ` · ${rec.outcome}` : ''}${rec.cancelReason ? ` · ${rec.cancelReason}` : ''}</dd>
!${rec.nextAttemptAt ? html`<dt>Next attempt</dt><dd>!${time(rec.nextAttemptAt)}</dd>` : ''}<dt>The user saw</dt><dd>!${rec.ephemeralMessage ? html`${rec.ephemeralMessage}` : '<span class="muted">nothing</span>'}</dd>
<dt>Updated</dt><dd>!${time(rec.updatedAt)}</dd></dl>
<div class="row">!${buttons}</div>
<h2>Attempts (!${rec.attempts.length})</h2>!${
    rec.attempts.length
      ? html`<ul class="plain" aria-label="Attempts, newest first">!${rec.attempts
          .map((a, i) => attemptItem(rec, a, headersOf(a), i === rec.attempts.length - 1))
          .reverse()
          .join('')}</ul>`
      : '<p class="muted">None yet.</p>'
  }
!${rec.response !== undefined ? html`<h2>The app's answer</h2><pre>${JSON.stringify(rec.response, null, 2)}</pre>` : ''}`;
}

/** A word for a shell: single-quoted, a quote inside written as '\''. */
const shellWord = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The curl command of `c`: the exact body, the headers signed at the moment it was asked for. */
function curlCommand(c: CurlParts): string {
  return [
    `curl -X POST ${shellWord(c.url)}`,
    ...c.headers.map(([k, v]) => `-H ${shellWord(`${k}: ${v}`)}`),
    `--data-binary ${shellWord(c.body)}`,
  ].join(' \\\n  ');
}

/** The body as the page shows it: its JSON-encoded field decoded, pretty-printed; the exact bytes under it. */
function bodySection(rec: DeliveryRecord): string {
  if (!rec.payload)
    return '<p class="muted">Not kept: this trigger succeeded before the daemon restarted, and the body of a successful trigger is not written to disk.</p>';
  const { body, decoded } = withFieldDecoded(rec.kind, rec.payload);
  return html`!${decoded ? html`<p class="muted"><code>${decoded}</code> is sent as a JSON-encoded string; it is shown decoded.</p>` : ''}<pre aria-label="Body">${JSON.stringify(body, null, 2)}</pre><details><summary>On one line, as sent</summary><pre class="wrap" aria-label="Body as sent">${JSON.stringify(rec.payload)}</pre></details>`;
}

/** Edit the body (its encoded field decoded), then send it as a new delivery or copy it as curl. */
function editForm(rec: DeliveryRecord, csrf: string, edited: string | undefined): string {
  if (!rec.payload && edited === undefined) return '';
  const base = `/console/deliveries/${rec.id}`;
  const text = edited ?? JSON.stringify(withFieldDecoded(rec.kind, rec.payload).body, null, 2);
  const http = rec.transport === 'http' && !!rec.url;
  return html`<details class="edit"${edited !== undefined ? ' open' : ''}><summary><strong>Edit and replay${http ? ', or copy as curl' : ''}</strong></summary><form method="post" action="${base}/replay">!${csrfField(csrf)}
<label for="edit-body">Body (JSON)</label><textarea id="edit-body" name="body" spellcheck="false" aria-describedby="edit-hint">${text}</textarea>
<p class="muted" id="edit-hint">Sent as a new delivery marked as an edited replay, to the same ${http ? 'URL' : 'connection'}, ${http ? 'signed afresh over the edited bytes' : 'as a socket-mode frame'}; an event is tried once. An object in <code>body</code> (an event) or <code>payload</code> (a block interaction) is JSON-encoded again, as the platform sends it.</p>
<div class="row"><button type="submit" class="primary">Send edited replay</button>!${http ? html`<button type="submit" formaction="${base}/curl">Copy as curl</button>` : ''}</div></form></details>`;
}

/** The curl command asked for: signed now, the secret never in it. */
function curlCard(c: CurlParts, edited: boolean): string {
  const at = c.headers.find(([k]) => k.endsWith('timestamp'))?.[1];
  const when = at ? new Date(Number(at)).toISOString() : '';
  return html`<div class="card" id="curl-card"><h2>As a curl command${edited ? ' (the body as edited)' : ''}</h2><pre class="wrap" id="curl" aria-label="curl command">${curlCommand(c)}</pre>
<div class="row"><button type="button" data-copy="curl">Copy</button><span class="live" id="copy-status" role="status"></span></div>
<p class="muted">Signed for this body at ${when} with the app's signing secret; the secret is not in it. An app that refuses old timestamps accepts it for as long as its window allows; ask again for a fresh one. The signature is over the body exactly as written here: change a byte and the app refuses it.</p></div>`;
}

/** `extra.since`: the live stream's cursor, the version of the delivery this page shows. */
export function deliveryPage(
  shell: Shell,
  rec: DeliveryRecord,
  headersOf: (a: AttemptEntry) => Array<[string, string]>,
  notice?: { text: string; bad: boolean },
  extra: { curl?: CurlParts; edited?: string; since?: string } = {},
): string {
  const first = rec.attempts[0];
  const request =
    rec.transport === 'http'
      ? html`<p><code>POST ${rec.url ?? '(no URL)'}</code></p>!${
          first
            ? html`<pre class="wrap" aria-label="Headers">!${headerLines(headersOf(first))}</pre><p class="muted">The headers of the first attempt; each attempt is signed anew (its headers, and the answer's, are under it).</p>`
            : '<p class="muted">Not sent yet.</p>'
        }`
      : "<p>Sent as a frame on the app's socket-mode connection (frames are not signed).</p>";
  const title = `${rec.kind}${rec.subject ? ` ${rec.subject}` : ''} to ${rec.appName}`;
  return consolePage(
    `Delivery ${rec.id}`,
    shell,
    html`!${notice ? html`<p class="${notice.bad ? 'error' : 'ok'}" role="status">${notice.text}</p>` : ''}!${extra.curl ? curlCard(extra.curl, extra.edited !== undefined) : ''}<div class="card"><h1>${title}!${editedMark(rec)}</h1>
<dl><dt>Delivery</dt><dd><code>${rec.id}</code></dd>!${rec.editedFrom ? html`<dt>Edited replay of</dt><dd><a href="/console/deliveries/${encodeURIComponent(rec.editedFrom)}"><code>${rec.editedFrom}</code></a></dd>` : ''}<dt>App</dt><dd><a href="/console/apps/${rec.appId}">${rec.appName}</a></dd><dt>Target</dt><dd>!${target(rec)}</dd><dt>Created</dt><dd>!${time(rec.createdAt)}</dd></dl>
<p class="live" id="one-status" role="status"></p><div id="delivery" data-stream="/console/events?delivery=${encodeURIComponent(rec.id)}!${extra.since ? html`&amp;since=${encodeURIComponent(extra.since)}` : ''}">!${deliveryLive(rec, shell.csrf, headersOf)}</div></div>
<div class="card"><h2>Request</h2>!${request}<h2>Body</h2>!${bodySection(rec)}!${editForm(rec, shell.csrf, extra.edited)}</div>`,
  );
}
