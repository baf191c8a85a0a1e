import { esc, monogram, page } from './layout.js';

export interface HomeView {
  name: string;
  email: string;
  workspaces: Array<{ name: string; apps: Array<{ id: string; displayName: string; socketMode: boolean; published: boolean }> }>;
}

/** The signed-in browser's landing page: who you are and your apps per workspace. */
export function homePage(v: HomeView): string {
  const sections = v.workspaces
    .map(
      (w) => `<h2>${esc(w.name)}</h2>
${
  w.apps.length
    ? `<ul class="scopes">${w.apps.map((a) => `<li><div class="app">${monogram(a.displayName, a.id)}<div><strong>${esc(a.displayName)}</strong><br><code>${esc(a.id)}</code> · ${a.socketMode ? 'socket mode' : 'HTTP'}${a.published ? ' · published' : ''}</div></div></li>`).join('')}</ul>`
    : '<p class="muted">No apps yet: <code>appreg apps create --file manifest.json</code></p>'
}`,
    )
    .join('\n');
  return page('appreg', `<div class="card"><h1>appreg</h1><p>Signed in as <strong>${esc(v.name)}</strong> <span class="muted">${esc(v.email)}</span></p>${sections}</div>`);
}

/** For a browser that is not signed in. */
export function signedOutPage(): string {
  return page('appreg · sign in', `<div class="card"><h1>Not signed in</h1>
<p>Run <code>appreg open</code> on the machine where appreg runs: it prints (and opens) a one-time link that signs this browser in.</p></div>`);
}
