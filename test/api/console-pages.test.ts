/**
 * src/console-pages.ts lists the pages `appreg open --path` may land on: exactly the console's GET
 * pages (not its script or its live streams). A page added to the console without being listed
 * there would be refused by `open --path`; one listed that no longer exists would land on a 404.
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { createHttpApp } from '../../src/server/app.js';
import { CONSOLE_PAGES } from '../../src/console-pages.js';

interface Layer {
  route?: { path: string | string[] | RegExp; methods?: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

function getRoutes(stack: Layer[], out: string[] = []): string[] {
  for (const l of stack) {
    // a RegExp route is the console's not-found page for browsers, no page of its own
    if (l.route?.methods?.get) out.push(...[l.route.path].flat().filter((p): p is string => typeof p === 'string'));
    else if (l.handle?.stack) getRoutes(l.handle.stack, out);
  }
  return out;
}

/** Not pages a person lands on: the console's script, its live streams (server-sent events), a recording's file. */
const NOT_PAGES = /^\/console\/console\.js$|\/events$|\/suite\.yaml$/;

t.test("the console pages open --path accepts are exactly the console's GET pages", async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = createHttpApp(d.parts, () => d.url) as unknown as { router: { stack: Layer[] } };
  const pages = getRoutes(app.router.stack).filter(
    (p) => (p === '/' || p === '/console' || p.startsWith('/console/')) && !NOT_PAGES.test(p),
  );
  t.ok(pages.length >= 10, `found the console's routes (${pages.length})`);
  t.same([...new Set(pages)].sort(), CONSOLE_PAGES.map(([p]) => p).sort());
});
