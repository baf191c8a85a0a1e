/** The page a permanent call's link opens: appreg carries no audio or video, so it names the call. */
import { html } from 'ghtml';
import { page } from './layout.js';

export function callPage(c: { code: string; userName: string }): string {
  return page(
    `Call of ${c.userName}`,
    html`<div class="card"><h1>Permanent call of ${c.userName}</h1>
<p>Code <code>${c.code}</code></p>
<p class="muted">This is appreg, a local stand-in for the platform: it keeps the call's link so that apps can hand it out, but carries no audio or video.</p></div>`,
  );
}

export function noCallPage(): string {
  return page(
    'No such call',
    html`<div class="card" role="alert"><h1>No such call</h1><p class="error">This link names no call of this daemon.</p></div>`,
  );
}
