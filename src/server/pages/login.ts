import { esc, monogram, page } from './layout.js';

export function loginPage(opts: { appName: string; appId: string; csrf: string; email?: string; error?: string }): string {
  return page(`Sign in · ${opts.appName}`, `<div class="card">
<div class="app">${monogram(opts.appName, opts.appId)}<div><h1>Sign in to continue</h1><p class="muted">${esc(opts.appName)} is asking for access to your workspace.</p></div></div>
${opts.error ? `<p class="error" role="alert">${esc(opts.error)}</p>` : ''}
<form method="post" action="/access-request/login">
<input type="hidden" name="csrf" value="${esc(opts.csrf)}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${esc(opts.email ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="buttons"><button class="primary" type="submit" id="sign-in">Sign in</button></div>
</form></div>`);
}
