/**
 * The pages are written with ghtml's `html` tag: every interpolation is escaped unless it is
 * marked raw with `!${…}`. Each page is rendered here with a hostile value in every text it
 * shows; none of them may come out as markup or leave its attribute. A `${…}` left unescaped
 * (raw by mistake, or a page built without the tag) makes this test fail.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/cli.js';
import { sourceFiles } from '../helpers/sources.js';
import { consentPage, loginPage } from '../../src/server/pages/consent.js';
import { errorPage } from '../../src/server/pages/layout.js';
import { signedOutPage, switchAccountPage } from '../../src/server/pages/sign-in.js';
import { callPage } from '../../src/server/pages/call.js';
import { appPage, appsListPage, confirmPage } from '../../src/server/pages/console/apps.js';
import { managePage } from '../../src/server/pages/console/manage.js';
import { plainPage, type Shell } from '../../src/server/pages/console/layout.js';

const BAD = `x"'><b id=injected>`;
/**
 * What a hostile value would leave in the page if it were not escaped: an element of its own, or an attribute closed
 * early.
 */
const broken = (html: string) => html.includes('<b id=injected>') || /"'>/.test(html);

const shell: Shell = {
  section: 'apps',
  userName: BAD,
  csrf: BAD,
  workspaces: [
    { id: BAD, name: BAD, selected: true },
    { id: 'w2', name: BAD, selected: false },
  ],
};

const pages: Record<string, () => string> = {
  consent: () =>
    consentPage({
      appId: BAD,
      displayName: BAD,
      botTitle: BAD,
      hasBot: true,
      redirectOrigin: BAD,
      userScopes: [BAD],
      botScopes: [BAD],
      newBotScopes: [BAD],
      botScopesGranted: false,
      reinstall: false,
      workspaces: [{ id: BAD, name: BAD, selected: true }],
      userName: BAD,
      csrf: BAD,
    }),
  login: () => loginPage({ appName: BAD, appId: BAD, csrf: BAD, email: BAD, error: BAD }),
  error: () => errorPage(BAD, BAD),
  'signed out': () => signedOutPage(),
  'switch account': () =>
    switchAccountPage({ current: { name: BAD, email: BAD }, link: { name: BAD, email: BAD }, token: BAD, csrf: BAD }),
  call: () => callPage({ code: BAD, userName: BAD }),
  'apps list': () =>
    appsListPage(shell, {
      rows: [
        {
          id: BAD,
          displayName: BAD,
          name: BAD,
          socketMode: false,
          published: true,
          installedIn: [BAD],
          connections: 0,
        },
      ],
      page: 1,
      pages: 2,
      total: 1,
    }),
  app: () =>
    appPage(shell, {
      app: {
        id: BAD,
        name: BAD,
        displayName: BAD,
        published: false,
        bot: true,
        botTitle: BAD,
        socketMode: false,
        eventSubscriptions: { url: BAD, events: [BAD] },
        blockInteraction: { url: BAD },
        viewAction: { url: BAD },
        helpUrl: BAD,
        listingUrl: BAD,
        slashCommands: [{ command: BAD, usageHint: BAD, description: BAD, url: BAD }],
        shortcuts: [{ name: BAD, displayName: BAD, shortcutType: 'GLOBAL', url: BAD }],
        dynamicMenus: [{ onAction: BAD, url: BAD }],
        scopes: { botScopes: [BAD], userScopes: [BAD] },
        redirectUrls: [BAD],
      },
      installedIn: [{ workspaceId: BAD, name: BAD }],
      connections: 0,
      queuedEvents: 0,
      secrets: { clientSecret: BAD, appKey: BAD, signingSecret: BAD },
      notice: BAD,
      warnings: [{ pointer: BAD, message: BAD }],
      installUrl: BAD,
    }),
  confirm: () => confirmPage(shell, { title: BAD, message: BAD, action: BAD, label: BAD, cancelHref: BAD }),
  manage: () =>
    managePage(shell, {
      channels: [{ id: BAD, name: BAD, type: 'PUBLIC', archived: false, canArchive: true, canDelete: true }],
      groups: [{ id: BAD, name: BAD, handle: BAD, description: BAD, disabled: false, workspaceUserIds: [BAD] }],
      people: [{ id: BAD, name: BAD }],
      notice: BAD,
      error: BAD,
    }),
  'console error': () => plainPage(BAD, BAD),
};

t.test('the check sees a value that was not escaped', async (t) => {
  t.ok(broken(`<p>${BAD}</p>`));
  t.ok(broken(`<input value="${BAD}">`));
  t.notOk(broken(`<p>${BAD.replace(/[<>"']/g, (c) => `&#${c.charCodeAt(0)};`)}</p>`));
});

t.test('every page escapes every text it shows', async (t) => {
  for (const [name, render] of Object.entries(pages)) {
    const html = render();
    t.ok(html.length > 200, `${name}: rendered`);
    t.notOk(broken(html), `${name}: no hostile value came out as markup`);
  }
});

t.test('a raw interpolation holds markup built by the tag, never an untagged template', async (t) => {
  // `!${`…`}` would put an untagged template, and whatever it interpolates, into the page unescaped
  const files = sourceFiles(path.join(ROOT, 'src/server/pages'));
  t.ok(files.length > 10, `read ${files.length} files`);
  const found = files.flatMap((f) =>
    fs
      .readFileSync(f, 'utf8')
      .split('\n')
      .flatMap((l, i) => (/!\$\{[^}]*\?\s*`|!\$\{\s*`/.test(l) ? [`${path.relative(ROOT, f)}:${i + 1}`] : [])),
  );
  t.same(found, []);
});
