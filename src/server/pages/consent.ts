/** The OAuth consent screen's pages: sign-in, then the app's request with its scopes described in plain words. */
import { html } from 'ghtml';
import { monogram, page } from './layout.js';

/** Plain-language descriptions of the known scopes (docs/protocol.md §8) for the consent screen. */
const DESCRIPTIONS: Record<string, string> = {
  'messages:read': 'Read messages in channels and conversations',
  'messages:write': 'Send messages',
  'messages:edit': 'Edit messages',
  'messages:delete': 'Delete messages',
  'attachments:write': 'Add attachments to messages',
  'user:read': 'See people in the workspace and their profiles',
  'status:write': 'Set the status',
  'reaction:read': 'See reactions to messages',
  'reaction:write': 'Add and remove reactions',
  'channels:list': 'List channels',
  'channels:read': 'See channels and their details',
  'channels:write': 'Create and manage channels',
  'users:list': 'List the people in the workspace',
  'workspace:read': 'See the workspace details',
  'calls:write': 'Start and manage calls',
  'files:write': 'Upload files',
  'group:read': 'See user groups',
};

function describeScope(scope: string): string {
  return DESCRIPTIONS[scope] ?? `Use the "${scope}" permission`;
}

export function loginPage(opts: {
  appName: string;
  appId: string;
  csrf: string;
  email?: string;
  error?: string;
}): string {
  return page(
    `Sign in · ${opts.appName}`,
    html`<div class="card">
<div class="app">!${monogram(opts.appName, opts.appId)}<div><h1>Sign in to continue</h1><p class="muted">${opts.appName} is asking for access to your workspace.</p></div></div>
!${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
<form method="post" action="/access-request/login">
<input type="hidden" name="csrf" value="${opts.csrf}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${opts.email ?? ''}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="buttons"><button class="primary" type="submit" id="sign-in">Sign in</button></div>
</form></div>`,
  );
}

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
  return html`<ul class="scopes">!${scopes
    .map(
      (s) =>
        html`<li>${describeScope(s)}!${fresh.includes(s) ? '<span class="new">new</span>' : ''}<br><code>${s}</code></li>`,
    )
    .join('')}</ul>`;
}

export function consentPage(v: ConsentView): string {
  const bot = v.hasBot
    ? html`<h2>The bot “${v.displayName}” will be able to</h2>!${v.botTitle ? html`<p class="muted">${v.botTitle}</p>` : ''}!${scopeList(v.botScopes, v.newBotScopes)}
!${!v.botScopesGranted && v.newBotScopes.length ? html`<p class="notice">The app is already installed in this workspace; its bot keeps the permissions it has. New bot permissions need a reinstall.</p>` : ''}`
    : '';
  return page(
    `Authorize ${v.displayName}`,
    html`<div class="card">
<div class="app">!${monogram(v.displayName, v.appId)}<div><h1>${v.displayName} ${v.reinstall ? 'asks to be reinstalled' : 'wants access'}</h1>
<p class="muted">Signed in as ${v.userName}. After you decide you go to ${v.redirectOrigin}.</p></div></div>
<form method="post" action="/access-request/decision">
<input type="hidden" name="csrf" value="${v.csrf}">
<label for="workspace">Workspace</label>
<select id="workspace" name="workspaceId">!${v.workspaces.map((w) => html`<option value="${w.id}"${w.selected ? ' selected' : ''}>${w.name}</option>`).join('')}</select>
<h2>${v.displayName} will be able to, on your behalf</h2>
!${scopeList(v.userScopes)}
!${bot}
<div class="buttons"><button type="submit" name="decision" value="cancel" id="cancel">Cancel</button><button class="primary" type="submit" name="decision" value="allow" id="allow">Allow</button></div>
</form></div>`,
  );
}
