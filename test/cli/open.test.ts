/**
 * `appreg open`: a one-time sign-in link, printed, followed by a browser only
 * when there is a display and --print is not given; and serve's first start pointing to it.
 */
import t from 'tap';
import { until } from '../helpers/until.js';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon, tempDir } from '../helpers/daemon.js';
import { runCli, runMain, serveInProcess } from '../helpers/cli.js';
import { must } from '../../src/must.js';

/** A stand-in for the browser opener that records what it was asked to start; `fail` answers as a missing program. */
function fakeOpener(fail?: string) {
  const calls: Array<{ command: string; args: string[] }> = [];
  return { calls, startDetached: async (command: string, args: string[]) => (calls.push({ command, args }), fail) };
}

const noDisplay = { DISPLAY: undefined, WAYLAND_DISPLAY: undefined };

t.test('against a running daemon', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const g = ['--url', d.url, '--token', d.token];

  t.test('--print prints only the link; following it signs the browser in and lands on /', async (t) => {
    const opener = fakeOpener();
    const r = await runMain([...g, 'open', '--print'], {
      env: { DISPLAY: ':0' },
      platform: 'linux',
      startDetached: opener.startDetached,
    });
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /^http:\/\/127\.0\.0\.1:\d+\/web\/sign-in\?token=\S+\n$/, 'one line: the URL');
    t.same(opener.calls, [], '--print opens nothing, even with a display');
    const link = r.stdout.trim();
    const res = await fetch(link, { redirect: 'manual' });
    t.equal(res.status, 303);
    t.equal(res.headers.get('location'), '/');
    const cookie = res.headers.get('set-cookie');
    t.ok(cookie, 'a session cookie');
    const home = await fetch(`${d.url}/`, { headers: { cookie: must(must(cookie).split(';')[0]) } });
    t.equal(home.status, 200);
    t.match(await home.text(), /Signed in as Owner/);
    t.equal((await fetch(link, { redirect: 'manual' })).status, 403, 'the link works once');
  });

  t.test('--json gives {url, expiresAt}; --path is where the browser lands', async (t) => {
    const r = await runMain([...g, 'open', '--json', '--print', '--path', '/?from=cli']);
    t.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout);
    t.same(Object.keys(j).sort(), ['expiresAt', 'url']);
    const left = Date.parse(j.expiresAt) - Date.now();
    t.ok(left > 4 * 60_000 && left <= 5 * 60_000 + 1000, `valid for 5 minutes (${left} ms left)`);
    const res = await fetch(j.url, { redirect: 'manual' });
    t.equal(res.status, 303);
    t.equal(res.headers.get('location'), '/?from=cli');
    const home = await fetch(`${d.url}/`, {
      headers: { cookie: must(must(res.headers.get('set-cookie')).split(';')[0]) },
    });
    t.match(await home.text(), /Signed in as/);
  });

  t.test(
    'a --path that is not a page of the console: exit 2 before any link is made, with the pages to give',
    async (t) => {
      for (const bad of ['https://evil.example/', '//evil.example/', 'nope', '/console/nope']) {
        const r = await runMain([...g, 'open', '--print', '--path', bad]);
        t.equal(r.code, 2, bad);
        t.match(
          r.stderr,
          `appreg: --path ${bad} is not a page of the daemon's console; pages include /, /console/apps/new, /console/deliveries, /console/channels, /console/channels/:channelId, /console/manage (an id where a page names one)\n`,
        );
        t.equal(r.stdout, '');
      }
      const j = await runMain([...g, 'open', '--json', '--path', 'x']);
      t.match(JSON.parse(j.stdout), { error: { code: 'usage_error' }, exitCode: 2 });
    },
  );

  t.test("--path /deliveries suggests the console's /console/deliveries; every console page is accepted", async (t) => {
    const r = await runMain([...g, 'open', '--print', '--path', '/deliveries']);
    t.equal(r.code, 2);
    t.match(
      r.stderr,
      /--path \/deliveries is not a page of the daemon's console; did you mean \/console\/deliveries\?/,
    );
    for (const ok of [
      '/console/deliveries',
      '/console/deliveries?app=app_1',
      '/console/channels/ch_1/threads/msg_2',
      '/console/apps/app_1/edit',
      '/?from=cli',
    ]) {
      const link = await runMain([...g, 'open', '--print', '--json', '--path', ok]);
      t.equal(link.code, 0, `${ok}: ${link.stderr}`);
      const res = await fetch(JSON.parse(link.stdout).url, { redirect: 'manual' });
      t.equal(res.headers.get('location'), ok, `${ok}: the link lands there`);
    }
  });

  t.test('the browser opener runs only when there is a display', async (t) => {
    const cases: Array<[NodeJS.Platform, Record<string, string | undefined>, string | undefined]> = [
      ['linux', noDisplay, undefined],
      ['linux', { ...noDisplay, DISPLAY: ':0' }, 'xdg-open'],
      ['linux', { ...noDisplay, WAYLAND_DISPLAY: 'wayland-0' }, 'xdg-open'],
      ['freebsd', noDisplay, undefined],
      ['darwin', noDisplay, 'open'],
      ['win32', noDisplay, 'cmd'],
    ];
    for (const [platform, env, command] of cases) {
      const opener = fakeOpener();
      const r = await runMain([...g, 'open'], { env, platform, startDetached: opener.startDetached });
      const what = `${platform} ${JSON.stringify(env)}`;
      t.equal(r.code, 0, r.stderr);
      const url = /(http:\/\/\S+)/.exec(r.stdout)?.[1];
      t.ok(url, `the link is printed (${what})`);
      if (!command) {
        t.same(opener.calls, [], `no opener without a display (${what})`);
        t.match(r.stdout, /^open it in your browser:\n {2}http:\/\/\S+\n\(the link works once, for 5 minutes\)\n$/);
      } else {
        t.equal(opener.calls.length, 1, `${command} started (${what})`);
        t.equal(must(opener.calls[0]).command, command);
        t.equal(must(opener.calls[0]).args.at(-1), url, 'with the link');
        if (command === 'cmd') t.same(must(opener.calls[0]).args, ['/c', 'start', '""', url]);
        t.match(r.stdout, /^opened your browser at http:\/\/\S+\n/);
      }
    }
  });

  t.test('a missing opener does not fail the command', async (t) => {
    const opener = fakeOpener('ENOENT');
    const r = await runMain([...g, 'open'], {
      env: { DISPLAY: ':0' },
      platform: 'linux',
      startDetached: opener.startDetached,
    });
    t.equal(r.code, 0, r.stderr);
    t.equal(opener.calls.length, 1);
    t.match(
      r.stdout,
      /^could not run xdg-open \(ENOENT\); open it in your browser:\n {2}http:\/\/\S+\/web\/sign-in\?token=\S+\n/,
    );
    const j = await runMain([...g, 'open', '--json'], {
      env: { DISPLAY: ':0' },
      platform: 'linux',
      startDetached: fakeOpener('ENOENT').startDetached,
    });
    t.equal(j.code, 0);
    t.same(Object.keys(JSON.parse(j.stdout)).sort(), ['expiresAt', 'url'], '--json stays one document');
  });

  t.test(
    'as a real process: a fake xdg-open on PATH is started with the link, and only with a display',
    { skip: process.platform !== 'linux' && 'xdg-open is the Linux opener' },
    async (t) => {
      const bin = tempDir('appreg-bin-');
      t.teardown(() => fs.rmSync(bin, { recursive: true, force: true }));
      const marker = path.join(bin, 'opened');
      fs.writeFileSync(path.join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$1" >> '${marker}'\n`, { mode: 0o755 });
      const env = { ...noDisplay, PATH: bin };

      const none = await runCli([...g, 'open'], { env });
      t.equal(none.code, 0, none.stderr);
      t.match(none.stdout, /^open it in your browser:/);

      const shown = await runCli([...g, 'open'], { env: { ...env, DISPLAY: ':0' } });
      t.equal(shown.code, 0, shown.stderr);
      const url = /(http:\/\/\S+)/.exec(shown.stdout)?.[1];
      await until(() => fs.existsSync(marker) && fs.readFileSync(marker, 'utf8').includes(`${url}\n`));
      // the opener appends each link it gets: the run without DISPLAY, earlier, would have added its own
      t.equal(
        fs.readFileSync(marker, 'utf8'),
        `${url}\n`,
        'xdg-open got the link, and only from the run with a display',
      );

      const missing = await runCli([...g, 'open'], {
        env: { ...noDisplay, PATH: path.join(bin, 'none'), DISPLAY: ':0' },
      });
      t.equal(missing.code, 0, 'an opener that is not installed does not fail the command');
      t.match(missing.stdout, /^could not run xdg-open \(ENOENT\); open it in your browser:\n {2}http:\/\/\S+\n/);
    },
  );
});

t.test('serve: the first start says to run appreg open', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const s = await serveInProcess(['--data-dir', dir]);
  t.equal(await s.stop(), 0, s.out.stderr);
  const esc = dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const logged = s.out.stderr
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { msg: string });
  const first = logged.findIndex((l) => /^first start: created workspace/.test(l.msg));
  t.ok(first >= 0, 'the first start is said in the log');
  t.match(
    logged[first + 1]?.msg,
    new RegExp(`^to sign a browser in as the owner \\(who has no password\\): appreg open --data-dir ${esc}$`),
  );
  const dir2 = tempDir();
  t.teardown(() => fs.rmSync(dir2, { recursive: true, force: true }));
  const s2 = await serveInProcess([], { env: { APPREG_DATA_DIR: dir2 } });
  t.equal(await s2.stop(), 0, s2.out.stderr);
  t.match(
    s2.out.stderr,
    /\(who has no password\): appreg open"/,
    'no --data-dir when the CLI finds the data dir by itself',
  );
});
