/**
 * The delivery inspector: the live list with its filters and the test-trigger
 * form, and a delivery's page (the request as sent, every attempt). The list's rows and the
 * delivery's live part are rendered by the same functions for the page and for the live
 * stream, so an update looks exactly like a reload.
 */
import type { AttemptEntry, DeliveryRecord } from '../../../services/deliveries.js';
import { esc } from '../layout.js';
import { actionForm, consolePage, csrfField, type Shell } from './layout.js';

export const STATES = ['pending', 'delivered', 'failed', 'retrying', 'cancelled'] as const;

export interface ListFilter {
  app?: string;
  kind?: string;
  state?: string;
}

const badge = (state: string) => `<span class="badge s-${esc(state)}">${esc(state)}</span>`;
const time = (iso: string) => `<time datetime="${esc(iso)}">${esc(iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z'))}</time>`;

/** One row of the list (also sent by the live stream). */
export function deliveryRow(r: DeliveryRecord): string {
  const last = r.attempts.at(-1);
  return `<tr id="d-${esc(r.id)}"><td><a href="/console/deliveries/${esc(r.id)}">${time(r.createdAt)}</a></td><td>${esc(r.appName)}</td><td>${esc(r.kind)}</td><td>${badge(r.state)}</td><td class="wide">${r.attempts.length}${
    last ? ` · ${esc(last.outcome)}${last.status !== undefined ? ` ${last.status}` : ''}` : ''
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

function select(id: string, name: string, label: string, options: Array<[string, string]>, selected: string | undefined, anyLabel?: string): string {
  const opts = (anyLabel !== undefined ? [['', anyLabel] as [string, string]] : []).concat(options);
  return `<div><label for="${id}">${label}</label><select id="${id}" name="${name}">${opts.map(([v, l]) => `<option value="${esc(v)}"${v === (selected ?? '') ? ' selected' : ''}>${esc(l)}</option>`).join('')}</select></div>`;
}

/** Many apps: a text field for the app id instead of a select of them all (the page stays small). */
function appField(id: string, name: string, label: string, apps: ListView['apps'], selected: string | undefined, anyLabel?: string): string {
  if (apps.length <= 200) return select(id, name, label, apps.map((a) => [a.id, a.displayName]), selected, anyLabel);
  return `<div><label for="${id}">${label}</label><input type="text" id="${id}" name="${name}" value="${esc(selected ?? '')}" placeholder="app id" autocomplete="off"></div>`;
}

export function deliveriesPage(shell: Shell, v: ListView): string {
  const f = v.filter;
  const q = new URLSearchParams([...Object.entries(f), ['since', v.since]].filter(([, x]) => x) as Array<[string, string]>).toString();
  const filters = `<form class="filters" method="get" action="/console/deliveries" aria-label="Filter deliveries">${appField('f-app', 'app', 'App', v.apps, f.app, 'All apps')}${select(
    'f-kind',
    'kind',
    'Kind',
    v.kinds.map((k) => [k, k]),
    f.kind,
    'All kinds',
  )}${select('f-state', 'state', 'State', STATES.map((s) => [s, s]), f.state, 'All states')}<button type="submit">Filter</button></form>`;
  const trigger = `<details class="card"${v.error ? ' open' : ''}><summary><strong>Send a test trigger</strong></summary>
<form method="post" action="/console/deliveries" aria-label="Send a test trigger">${csrfField(shell.csrf)}
<div class="filters">${appField('t-app', 'appId', 'App', v.apps, f.app)}${select('t-kind', 'kind', 'Kind', v.kinds.map((k) => [k, k]), f.kind ?? 'slash-command')}</div>
<div class="filters"><div><label for="t-command">Command</label><input type="text" id="t-command" name="command" placeholder="/command"></div><div><label for="t-text">Text</label><input type="text" id="t-text" name="text"></div>
<div><label for="t-shortcut">Shortcut</label><input type="text" id="t-shortcut" name="shortcut" placeholder="name"></div><div><label for="t-action">Action (onAction)</label><input type="text" id="t-action" name="onAction"></div>
<div><label for="t-value">Value</label><input type="text" id="t-value" name="value"></div><div><label for="t-event">Event</label><input type="text" id="t-event" name="event" placeholder="NEW_MESSAGE"></div>
<div><label for="t-query">Menu query</label><input type="text" id="t-query" name="query"></div>${select('t-source', 'sourceType', 'Interaction source', [['MESSAGE', 'message'], ['EPHEMERAL_MESSAGE', 'ephemeral message'], ['VIEW', 'view']], 'MESSAGE')}${select('t-view-action', 'viewActionType', 'View action', [['SUBMIT', 'submit'], ['CLOSE', 'close']], 'SUBMIT')}
<div><label for="t-timeout">Timeout (ms)</label><input type="number" id="t-timeout" name="timeoutMs" min="1" max="60000"></div></div>
<div class="row"><button type="submit" class="primary">Send trigger</button></div></form></details>`;
  const rows = v.rows.map(deliveryRow).join('\n');
  return consolePage(
    'Deliveries',
    shell,
    `${v.error ? `<p class="error" role="alert">${esc(v.error)}</p>` : ''}${trigger}<div class="card"><h1>Deliveries</h1>${filters}
<p class="live" id="live" role="status" aria-live="polite" data-stream="/console/events${q ? `?${esc(q)}` : ''}">Newest first; new deliveries appear here.</p>
<div class="scroll"><table><thead><tr><th scope="col">Created</th><th scope="col">App</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col" class="wide">Attempts</th></tr></thead><tbody id="rows">${rows}</tbody></table></div>
${v.rows.length ? '' : '<p class="muted" id="empty">No deliveries yet.</p>'}</div>`,
  );
}

function attemptItem(rec: DeliveryRecord, a: AttemptEntry, headers: Array<[string, string]> | undefined): string {
  const sent = headers ? `<details><summary>Headers sent</summary><pre>${esc(headers.map(([k, x]) => `${k}: ${x}`).join('\n'))}</pre></details>` : '';
  return `<li><div class="row"><strong>#${a.retryNum + 1}</strong> ${time(a.at)} <span class="badge">${esc(a.outcome)}</span>${a.status !== undefined ? ` <span>status ${a.status}</span>` : ''} <span class="muted">${a.latencyMs} ms</span>${a.replay ? ' <span class="badge">replay</span>' : ''}</div>${
    a.message ? `<p>The app's message: ${esc(a.message)}</p>` : ''
  }${a.error ? `<p class="muted">${esc(a.error)}</p>` : ''}${a.excerpt ? `<pre aria-label="The answer's excerpt">${esc(a.excerpt)}</pre>` : ''}${rec.transport === 'http' ? sent : ''}</li>`;
}

/** The part of a delivery's page that changes (also sent by the live stream). */
export function deliveryLive(rec: DeliveryRecord, csrf: string, headersOf: (a: AttemptEntry) => Array<[string, string]>): string {
  const base = `/console/deliveries/${esc(rec.id)}`;
  const buttons = [rec.payload ? actionForm(`${base}/replay`, csrf, 'Replay', 'primary') : '', rec.state === 'retrying' ? actionForm(`${base}/cancel`, csrf, 'Cancel', 'danger') : ''].join('');
  return `<dl><dt>State</dt><dd>${badge(rec.state)}${rec.outcome ? ` · ${esc(rec.outcome)}` : ''}${rec.cancelReason ? ` · ${esc(rec.cancelReason)}` : ''}</dd>
${rec.nextAttemptAt ? `<dt>Next attempt</dt><dd>${time(rec.nextAttemptAt)}</dd>` : ''}<dt>The user saw</dt><dd>${rec.ephemeralMessage ? esc(rec.ephemeralMessage) : '<span class="muted">nothing</span>'}</dd>
<dt>Updated</dt><dd>${time(rec.updatedAt)}</dd></dl>
<div class="row">${buttons}</div>
<h2>Attempts (${rec.attempts.length})</h2>${rec.attempts.length ? `<ul class="plain" aria-label="Attempts, newest first">${rec.attempts.map((a) => attemptItem(rec, a, headersOf(a))).reverse().join('')}</ul>` : '<p class="muted">None yet.</p>'}
${rec.response !== undefined ? `<h2>The app's answer</h2><pre>${esc(JSON.stringify(rec.response, null, 2))}</pre>` : ''}`;
}

/** `since`: the live stream's cursor, the version of the delivery this page shows. */
export function deliveryPage(shell: Shell, rec: DeliveryRecord, headersOf: (a: AttemptEntry) => Array<[string, string]>, notice?: { text: string; bad: boolean }, since?: string): string {
  const first = rec.attempts[0];
  const request =
    rec.transport === 'http'
      ? `<p><code>POST ${esc(rec.url ?? '(no URL)')}</code></p>${
          first
            ? `<pre aria-label="Headers">${esc(headersOf(first).map(([k, x]) => `${k}: ${x}`).join('\n'))}</pre><p class="muted">The headers of the first attempt; each attempt is signed anew (its headers are under it).</p>`
            : '<p class="muted">Not sent yet.</p>'
        }`
      : '<p>Sent as a frame on the app\'s socket-mode connection (frames are not signed).</p>';
  return consolePage(
    `Delivery ${rec.id}`,
    shell,
    `${notice ? `<p class="${notice.bad ? 'error' : 'ok'}" role="status">${esc(notice.text)}</p>` : ''}<div class="card"><h1>${esc(rec.kind)} to ${esc(rec.appName)}</h1>
<dl><dt>Delivery</dt><dd><code>${esc(rec.id)}</code></dd><dt>App</dt><dd><a href="/console/apps/${esc(rec.appId)}">${esc(rec.appName)}</a></dd><dt>Created</dt><dd>${time(rec.createdAt)}</dd></dl>
<p class="live" id="one-status" role="status"></p><div id="delivery" data-stream="/console/events?delivery=${esc(encodeURIComponent(rec.id))}${since ? `&amp;since=${esc(encodeURIComponent(since))}` : ''}">${deliveryLive(rec, shell.csrf, headersOf)}</div></div>
<div class="card"><h2>Request</h2>${request}<h2>Body</h2>${rec.payload ? `<pre aria-label="Body">${esc(JSON.stringify(rec.payload, null, 2))}</pre>` : '<p class="muted">Not kept: this trigger succeeded before the daemon restarted, and the body of a successful trigger is not written to disk.</p>'}</div>`,
  );
}
