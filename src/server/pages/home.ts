import { page } from './layout.js';

/** For a browser that is not signed in. */
export function signedOutPage(): string {
  return page('appreg · sign in', `<div class="card"><h1>Not signed in</h1>
<p>Run <code>appreg open</code> on the machine where appreg runs: it prints (and opens) a one-time link that signs this browser in.</p></div>`);
}
