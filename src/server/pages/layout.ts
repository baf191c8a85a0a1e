/**
 * The HTML shell of the consent screen's and the sign-in link's pages (and their error page): server-rendered, no
 * external assets, one inline stylesheet allowed by its hash in the Content-Security-Policy, a viewport
 * meta so it reads well on a phone.
 */
import { html } from 'ghtml';
import crypto from 'node:crypto';

const CSS = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f3f4f6;color:#111827}
main{max-width:30rem;margin:0 auto;padding:1rem}
.card{background:#fff;border-radius:12px;box-shadow:0 1px 3px rgba(0,0,0,.12);padding:1.25rem;margin-top:1rem}
h1{font-size:1.25rem;margin:.25rem 0 .75rem}
h2{font-size:1rem;margin:1rem 0 .25rem}
p{margin:.5rem 0}
.app{display:flex;align-items:center;gap:.75rem}
.avatar{flex:none;width:3rem;height:3rem;border-radius:10px;color:#fff;font-weight:700;font-size:1.4rem;display:flex;align-items:center;justify-content:center}
.c0{background:#2563eb}.c1{background:#7c3aed}.c2{background:#db2777}.c3{background:#059669}.c4{background:#d97706}.c5{background:#0891b2}.c6{background:#4b5563}.c7{background:#dc2626}
.muted{color:#6b7280;font-size:.9rem}
ul.scopes{list-style:none;padding:0;margin:.25rem 0}
ul.scopes li{padding:.5rem 0;border-top:1px solid #e5e7eb}
ul.scopes code{font-size:.8rem;color:#6b7280}
.new{display:inline-block;background:#fef3c7;color:#92400e;border-radius:6px;padding:0 .4rem;font-size:.75rem;margin-left:.25rem}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input,select{width:100%;font:inherit;padding:.6rem;border:1px solid #d1d5db;border-radius:8px;background:#fff}
.buttons{display:flex;gap:.75rem;margin-top:1.25rem}
button{flex:1;font:inherit;font-weight:600;padding:.75rem;border-radius:8px;border:1px solid #d1d5db;background:#fff;cursor:pointer;min-height:44px}
button.primary{background:#2563eb;border-color:#2563eb;color:#fff}
.error{background:#fee2e2;color:#991b1b;border-radius:8px;padding:.6rem .75rem}
.notice{background:#fef3c7;color:#78350f;border-radius:8px;padding:.6rem .75rem}
`;

const STYLE_HASH = `'sha256-${crypto.createHash('sha256').update(CSS).digest('base64')}'`;

/**
 * The CSP of every page; `formTargets` are the origins a form on the page may end up at (Chrome applies form-action to
 * redirects).
 */
export function contentSecurityPolicy(formTargets: string[] = []): string {
  return [
    "default-src 'none'",
    `style-src ${STYLE_HASH}`,
    "img-src 'none'",
    `form-action 'self'${formTargets.map((o) => ' ' + o).join('')}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

export function page(title: string, body: string): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>!${CSS}</style>
</head>
<body><main>!${body}</main></body>
</html>`;
}

/** A letter on a colour picked from the app id: the avatar without fetching a third-party image. */
export function monogram(name: string, id: string): string {
  const letter = (name.trim()[0] ?? '?').toUpperCase();
  let h = 0;
  for (const ch of id) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return html`<div class="avatar c${h % 8}" aria-hidden="true">${letter}</div>`;
}

/** The error page of the consent screen and of a sign-in link: never a redirect (docs/security.md §1 M7). */
export function errorPage(title: string, message: string): string {
  return page(
    title,
    html`<div class="card" role="alert"><h1>${title}</h1><p class="error">${message}</p>
<p class="muted">Nothing was shared with the app. You can close this page.</p></div>`,
  );
}
