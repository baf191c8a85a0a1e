import { esc, monogram, page } from './layout.js';
import { describeScope } from './scopes.js';

export interface ConsentView {
  appId: string;
  displayName: string;
  botTitle?: string | null;
  hasBot: boolean;
  redirectOrigin: string;
  userScopes: string[];
  botScopes: string[];
  /** Bot scopes that are new for this workspace's installation. */
  newBotScopes: string[];
  /** False when the app is installed and this is not a reinstall: the bot keeps its scopes. */
  botScopesGranted: boolean;
  reinstall: boolean;
  workspaces: Array<{ id: string; name: string; selected: boolean }>;
  userName: string;
  csrf: string;
}

function scopeList(scopes: string[], fresh: string[] = []): string {
  if (!scopes.length) return '<p class="muted">No permissions.</p>';
  return `<ul class="scopes">${scopes
    .map((s) => `<li>${esc(describeScope(s))}${fresh.includes(s) ? '<span class="new">new</span>' : ''}<br><code>${esc(s)}</code></li>`)
    .join('')}</ul>`;
}

export function consentPage(v: ConsentView): string {
  const bot = v.hasBot
    ? `<h2>The bot “${esc(v.displayName)}” will be able to</h2>${v.botTitle ? `<p class="muted">${esc(v.botTitle)}</p>` : ''}${scopeList(v.botScopes, v.newBotScopes)}
${!v.botScopesGranted && v.newBotScopes.length ? `<p class="notice">The app is already installed in this workspace; its bot keeps the permissions it has. New bot permissions need a reinstall.</p>` : ''}`
    : '';
  return page(`Authorize ${v.displayName}`, `<div class="card">
<div class="app">${monogram(v.displayName, v.appId)}<div><h1>${esc(v.displayName)} ${v.reinstall ? 'asks to be reinstalled' : 'wants access'}</h1>
<p class="muted">Signed in as ${esc(v.userName)}. After you decide you go to ${esc(v.redirectOrigin)}.</p></div></div>
<form method="post" action="/access-request/decision">
<input type="hidden" name="csrf" value="${esc(v.csrf)}">
<label for="workspace">Workspace</label>
<select id="workspace" name="workspaceId">${v.workspaces.map((w) => `<option value="${esc(w.id)}"${w.selected ? ' selected' : ''}>${esc(w.name)}</option>`).join('')}</select>
<h2>${esc(v.displayName)} will be able to, on your behalf</h2>
${scopeList(v.userScopes)}
${bot}
<div class="buttons"><button type="submit" name="decision" value="cancel" id="cancel">Cancel</button><button class="primary" type="submit" name="decision" value="allow" id="allow">Allow</button></div>
</form></div>`);
}
