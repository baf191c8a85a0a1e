/**
 * The pages of the daemon a browser may land on after signing in (`appreg open --path`, the
 * sign-in link's path): the console's pages. The CLI refuses any other path before asking for a
 * link, and the daemon refuses to issue a link to one, so nobody lands on a JSON 404.
 * A leaf module: the CLI loads it without the server. (test/api/console-pages.test.ts checks that
 * every GET page of the console is listed here.)
 */
import { must } from './must.js';

/** What `/console` and `/console/apps` show: they lead to the app list (not named among the pages to give). */
const LEADS_HOME = 'your apps (leads to /)';

/** Each page: its pattern (`:x` is one path segment) and what it shows, for the help and errors. */
export const CONSOLE_PAGES: ReadonlyArray<readonly [pattern: string, what: string]> = [
  ['/', 'your apps'],
  ['/console', LEADS_HOME],
  ['/console/apps', LEADS_HOME],
  ['/console/apps/new', 'register an app'],
  ['/console/apps/:appId', 'one app'],
  ['/console/apps/:appId/edit', "edit an app's manifest"],
  ['/console/apps/:appId/rotate', "rotate an app's secrets"],
  ['/console/apps/:appId/delete', 'delete an app'],
  ['/console/apps/:appId/installations/:workspaceId/uninstall', 'uninstall an app'],
  ['/console/deliveries', 'the delivery log'],
  ['/console/deliveries/:deliveryId', 'one delivery'],
  ['/console/channels', 'the workspace: channels'],
  ['/console/channels/:channelId', 'a channel'],
  ['/console/channels/:channelId/threads/:rootId', 'a thread'],
  ['/console/home/:appId', "an app's home view"],
  ['/console/manage', 'the workspace: archive and delete channels, user groups'],
  ['/console/manage/channels/:channelId/delete', 'delete a channel'],
  ['/console/recordings/:recordingId', 'a recorded test (appreg test --record)'],
];

const SEGMENT = /^[A-Za-z0-9_.~-]+$/;

function matches(pattern: string, pathname: string): boolean {
  if (pattern === '/') return pathname === '/';
  const want = pattern.split('/');
  const got = pathname.replace(/\/$/, '').split('/');
  return (
    want.length === got.length && want.every((w, i) => (w.startsWith(':') ? SEGMENT.test(must(got[i])) : w === got[i]))
  );
}

/** Whether `path` (with an optional query) is a page of the console. */
function isConsolePage(path: string): boolean {
  const pathname = must(path.split('?')[0]);
  return CONSOLE_PAGES.some(([p]) => matches(p, pathname));
}

/**
 * Why `path` is not a page, in one sentence with the pages one may give; undefined when it is one.
 * `/deliveries` is the console's `/console/deliveries`: that is suggested.
 */
export function whyNotAPage(path: string): string | undefined {
  if (isConsolePage(path)) return undefined;
  const guess = `/console${path.startsWith('/') ? '' : '/'}${path}`;
  const hint = isConsolePage(guess) ? `did you mean ${guess}? ` : '';
  const main = CONSOLE_PAGES.filter(
    ([p, what]) => what !== LEADS_HOME && (!p.includes(':') || p === '/console/channels/:channelId'),
  ).map(([p]) => p);
  return `${path} is not a page of the daemon's console; ${hint}pages include ${main.join(', ')} (an id where a page names one)`;
}
