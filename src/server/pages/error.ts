import { esc, page } from './layout.js';

/** The consent screen's error page: never a redirect (docs/security.md §1 M7). */
export function errorPage(title: string, message: string): string {
  return page(title, `<div class="card" role="alert"><h1>${esc(title)}</h1><p class="error">${esc(message)}</p>
<p class="muted">Nothing was shared with the app. You can close this page.</p></div>`);
}
