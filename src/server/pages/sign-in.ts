/**
 * The pages of signing a browser in: the one for a browser not signed in, and the one a sign-in link
 * shows in a browser already signed in as someone else (who is who, and a choice).
 */
import { html } from 'ghtml';
import { page } from './layout.js';

/** For a browser that is not signed in. */
export function signedOutPage(): string {
  return page(
    'appreg · sign in',
    html`<div class="card"><h1>Not signed in</h1>
<p>Run <code>appreg open</code> on the machine where appreg runs: it prints (and opens) a one-time link that signs this browser in.</p></div>`,
  );
}

export interface Person {
  name: string;
  email: string;
}

/** Switch to the link's account only on confirmation (a POST carrying the current session's token); or stay. */
export function switchAccountPage(v: { current: Person; link: Person; token: string; csrf: string }): string {
  const who = (p: Person) => html`<strong>${p.name}</strong> (${p.email})`;
  return page(
    'appreg · switch account?',
    html`<div class="card"><h1>Switch account?</h1>
<p>This browser is signed in as !${who(v.current)}.</p>
<p>The sign-in link you opened is for !${who(v.link)}.</p>
<form method="post" action="/web/sign-in"><input type="hidden" name="token" value="${v.token}"><input type="hidden" name="csrf" value="${v.csrf}">
<div class="buttons"><button type="submit" class="primary">Sign in as ${v.link.name}</button></div></form>
<p><a href="/">Stay signed in as ${v.current.name}</a></p>
<p class="muted">The link works once, for five minutes; staying leaves it unused.</p></div>`,
  );
}
