/** The console's Apps pages: the list, an app's page, the manifest form, confirmations. */
import { html } from 'ghtml';
import { actionForm, consolePage, csrfField, type Shell } from './layout.js';
import { annotatedManifest, type Problem } from './manifest-view.js';
import { must } from '../../../must.js';
import { fieldsOf as obj, itemsOf as arr } from '../../../unknown-values.js';

export interface AppRow {
  id: string;
  displayName: string;
  name: string;
  socketMode: boolean;
  published: boolean;
  installedIn: string[];
  connections: number;
}

export function appsListPage(shell: Shell, v: { rows: AppRow[]; page: number; pages: number; total: number }): string {
  const rows = v.rows
    .map(
      (
        a,
      ) => html`<tr><td><a href="/console/apps/${a.id}">${a.displayName}</a><br><code class="muted">${a.id}</code></td>
<td>${a.socketMode ? 'Socket' : 'HTTP'}</td><td class="wide">!${a.installedIn.length ? html`${a.installedIn.join(', ')}` : '<span class="muted">none</span>'}</td>
<td>!${a.published ? '<span class="badge s-delivered">published</span>' : '<span class="badge">draft</span>'}</td><td class="wide">!${a.socketMode ? a.connections : '<span class="muted">–</span>'}</td></tr>`,
    )
    .join('\n');
  const pager =
    v.pages > 1
      ? html`<nav class="row" aria-label="Pages">!${v.page > 1 ? html`<a class="button" href="/?page=!${v.page - 1}">Previous page</a>` : ''}<span class="muted">Page !${v.page} of !${v.pages}</span>!${v.page < v.pages ? html`<a class="button" href="/?page=!${v.page + 1}">Next page</a>` : ''}</nav>`
      : '';
  const table = v.total
    ? html`<div class="scroll"><table><caption class="muted">!${v.total} app${v.total === 1 ? '' : 's'}</caption><thead><tr><th scope="col">App</th><th scope="col">Mode</th><th scope="col" class="wide">Installed in</th><th scope="col">Published</th><th scope="col" class="wide">Open connections</th></tr></thead><tbody>!${rows}</tbody></table></div>!${pager}`
    : '<p class="muted">No apps yet. Create one from its manifest.</p>';
  return consolePage(
    'Apps',
    shell,
    html`<div class="card"><div class="row"><h1>Apps</h1><a class="button primary push" href="/console/apps/new">Create app</a></div>!${table}</div>`,
  );
}

export interface FormView {
  mode: 'create' | 'edit';
  appId?: string;
  text: string;
  /** The JSON value of `text` when it parsed, to show the problems inline. */
  parsed?: unknown;
  parseProblem?: string;
  message?: string;
  errors?: Problem[];
  warnings?: Problem[];
}

export function appFormPage(shell: Shell, v: FormView): string {
  const title = v.mode === 'create' ? 'Create an app' : 'Edit the manifest';
  const action = v.mode === 'create' ? '/console/apps' : `/console/apps/${v.appId ?? ''}/edit`;
  const n = v.errors?.length ?? 0;
  let problems = '';
  if (v.parseProblem)
    problems = html`<div class="error" role="alert" id="problems"><strong>The manifest is not JSON.</strong> ${v.parseProblem}</div>`;
  else if (n || v.message) {
    problems = html`<div class="error" role="alert" id="problems"><strong>${n ? `The manifest has ${n} problem${n === 1 ? '' : 's'}` : v.message}</strong>!${
      n
        ? html`<ul>!${must(v.errors)
            .map((e) => html`<li><code>${e.pointer || '/'}</code> ${e.message}</li>`)
            .join('')}</ul>`
        : ''
    }</div>!${v.parsed !== undefined && n ? html`<h2>Where</h2>!${annotatedManifest(v.parsed, v.errors ?? [], v.warnings ?? [])}` : ''}`;
  }
  return consolePage(
    title,
    { ...shell, section: 'apps' },
    html`<div class="card"><h1>!${title}</h1>!${problems}
<form method="post" action="${action}" enctype="multipart/form-data">!${csrfField(shell.csrf)}
<label for="manifest">Manifest (JSON)</label>
<textarea id="manifest" name="manifest" spellcheck="false" autocapitalize="off" aria-describedby="manifest-help"!${problems ? ' aria-invalid="true"' : ''}>${v.text}</textarea>
<p class="muted" id="manifest-help">Paste the manifest, or choose a file: a file replaces what is pasted.</p>
<label for="file">Manifest file</label><input type="file" id="file" name="file" accept=".json,application/json">
<div class="row"><button type="submit" class="primary">${v.mode === 'create' ? 'Create app' : 'Save manifest'}</button><a href="${v.mode === 'create' ? '/' : `/console/apps/${v.appId ?? ''}`}">Cancel</a></div>
</form></div>`,
  );
}

export interface AppPageView {
  app: Record<string, unknown> & { id: string; published: boolean };
  installedIn: Array<{ workspaceId: string; name: string }>;
  connections: number;
  queuedEvents: number;
  secrets?: { clientSecret: string; appKey: string; signingSecret: string };
  notice?: string;
  warnings?: Problem[];
  /** The consent screen's link to install the app (its first redirect URL), when it has one. */
  installUrl?: string;
}

const list = (items: string[], empty = 'none') =>
  items.length
    ? html`<ul class="plain">!${items.map((i) => html`<li>!${i}</li>`).join('')}</ul>`
    : html`<p class="muted">!${empty}</p>`;

export function appPage(shell: Shell, v: AppPageView): string {
  // the app object of docs/protocol.md §2 (apps.get): its arrays and objects are always present
  const a = v.app;
  const id = String(a.id);
  const scopes = obj(a.scopes);
  const codes = (items: unknown) => arr(items).map((x) => html`<code>${x}</code>`);
  const base = `/console/apps/${id}`;
  const urls: string[] = [];
  const url = (label: string, u: unknown) => {
    if (typeof u === 'string' && u) urls.push(html`<strong>${label}</strong><br><code>${u}</code>`);
  };
  url('Events', obj(a.eventSubscriptions).url);
  url('Block interactions', obj(a.blockInteraction).url);
  url('View actions', obj(a.viewAction).url);
  url('Help', a.helpUrl);
  url('Listing', a.listingUrl);
  const secrets = v.secrets
    ? html`<dl aria-label="Secrets"><dt>Client secret</dt><dd><code>${v.secrets.clientSecret}</code></dd><dt>App key</dt><dd><code>${v.secrets.appKey}</code></dd><dt>Signing secret</dt><dd><code>${v.secrets.signingSecret}</code></dd></dl>`
    : html`<div class="row">!${actionForm(`${base}/secrets`, shell.csrf, 'Show secrets')}</div>`;
  const warnings = v.warnings?.length
    ? html`<div class="notice" role="status"><strong>Warnings</strong><ul>!${v.warnings.map((w) => html`<li><code>${w.pointer || '/'}</code> ${w.message}</li>`).join('')}</ul></div>`
    : '';
  const actions = [
    v.app.published
      ? actionForm(`${base}/unpublish`, shell.csrf, 'Unpublish')
      : actionForm(`${base}/publish`, shell.csrf, 'Publish'),
    v.app.published ? '' : html`<a class="button" href="${base}/edit">Edit manifest</a>`,
    html`<a class="button" href="${base}/rotate">Rotate secrets</a>`,
    v.app.published ? '' : html`<a class="button danger" href="${base}/delete">Delete app</a>`,
    html`<a class="button" href="/console/deliveries?app=${id}">Deliveries</a>`,
    v.installUrl ? html`<a class="button" href="${v.installUrl}">Install in a workspace</a>` : '',
  ].join('');
  return consolePage(
    String(a.displayName),
    shell,
    html`!${v.notice ? html`<p class="ok" role="status">${v.notice}</p>` : ''}!${warnings}
<div class="card"><h1>${a.displayName}</h1>
<dl><dt>Id</dt><dd><code>${id}</code></dd><dt>Name</dt><dd><code>${a.name}</code></dd><dt>Mode</dt><dd>${a.socketMode ? `Socket mode · ${v.connections} open connection${v.connections === 1 ? '' : 's'} · ${v.queuedEvents} queued` : 'HTTP'}</dd>
<dt>Published</dt><dd>${a.published ? 'yes' : 'no'}</dd><dt>Bot</dt><dd>!${a.bot ? html`yes!${a.botTitle ? html` — ${a.botTitle}` : ''}` : 'no'}</dd>
<dt>Installed in</dt><dd>!${
      v.installedIn.length
        ? html`<ul class="plain">!${v.installedIn.map((w) => html`<li>${w.name} <a href="${base}/installations/${w.workspaceId}/uninstall">Uninstall from ${w.name}</a></li>`).join('')}</ul>`
        : 'no workspace yet'
    }</dd></dl>
<div class="row">!${actions}</div></div>
<div class="card"><h2>Secrets</h2>!${secrets}</div>
<div class="card"><h2>URLs</h2>!${list(urls)}
<h2>Slash commands</h2>!${list(
      arr(a.slashCommands)
        .map(obj)
        .map(
          (c) =>
            html`<code>${c.command}</code> ${c.usageHint ?? ''} — ${c.description ?? ''}<br><code class="muted">${c.url}</code>`,
        ),
    )}
<h2>Shortcuts</h2>!${list(
      arr(a.shortcuts)
        .map(obj)
        .map(
          (s) =>
            html`<strong>${s.displayName}</strong> <code>${s.name}</code> <span class="badge">${s.shortcutType === 'GLOBAL' ? 'global' : 'on a message'}</span><br><code class="muted">${s.url}</code>`,
        ),
    )}
<h2>Dynamic menus</h2>!${list(
      arr(a.dynamicMenus)
        .map(obj)
        .map((m) => html`<code>${m.onAction}</code><br><code class="muted">${m.url}</code>`),
    )}
<h2>Scopes</h2><dl><dt>Bot</dt><dd>!${codes(scopes.botScopes).join(' ') || 'none'}</dd><dt>User</dt><dd>!${codes(scopes.userScopes).join(' ') || 'none'}</dd></dl>
<h2>Events</h2><p>!${codes(obj(a.eventSubscriptions).events).join(' ') || '<span class="muted">none</span>'}</p>
<h2>Redirect URLs</h2>!${list(codes(a.redirectUrls))}</div>`,
  );
}

/** Are you sure? (Rotate secrets, Delete app): works without a script, from the keyboard. */
export function confirmPage(
  shell: Shell,
  v: { title: string; message: string; action: string; label: string; cancelHref: string },
): string {
  return consolePage(
    v.title,
    shell,
    html`<div class="card" role="alertdialog" aria-labelledby="confirm-title" aria-describedby="confirm-text"><h1 id="confirm-title">${v.title}</h1><p id="confirm-text">${v.message}</p>
<div class="row">!${actionForm(v.action, shell.csrf, v.label, 'danger')}<a class="button" href="${v.cancelHref}">Keep it as it is</a></div></div>`,
  );
}
