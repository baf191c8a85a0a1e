import t from 'tap';
import { startTestDaemon, storedText } from '../helpers/daemon.js';
import { createApp, grant, exchange, authorize, me } from '../fixtures/redirects-flow.js';
import { OAUTH_TABLES } from '../../src/model/oauth.js';
import { sha256 } from '../../src/crypto.js';
import { engineOf } from '../helpers/test-tables.js';
import { createTestClock } from '../helpers/test-clock.js';
import { logLines } from '../helpers/log-lines.js';
import { must } from '../../src/must.js';

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

t.test('code for tokens (docs/protocol.md §3, endpoint 6)', async (t) => {
  const clock = createTestClock();
  const d = await startTestDaemon({ clock });
  t.teardown(() => d.stop());
  const app = await createApp(d);

  t.test('multipart exchange as the official SDK sends it: 200, no-store, prefixed 256-bit tokens', async (t) => {
    const g = await grant(d, app, { state: 'xyz' });
    t.equal(g.res.status, 200);
    t.equal(g.res.headers.get('cache-control'), 'no-store');
    t.match(g.body.code, /^acd_[A-Za-z0-9_-]{43}$/);
    const loc = new URL(g.body.redirectUrl);
    t.equal(loc.origin + loc.pathname, 'http://localhost:9/redirect');
    t.equal(loc.searchParams.get('code'), g.body.code);
    t.equal(loc.searchParams.get('state'), 'xyz');
    const x = await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code: g.body.code });
    t.equal(x.res.status, 200);
    t.equal(x.res.headers.get('cache-control'), 'no-store');
    t.same(Object.keys(x.body).sort(), ['accessToken', 'botId', 'botToken', 'userId', 'workspaceId']);
    t.match(x.body.accessToken, /^aut_/);
    t.match(must(x.body.accessToken).slice(4), TOKEN);
    t.match(x.body.botToken, /^abt_/);
    t.match(must(x.body.botToken).slice(4), TOKEN);
    t.equal(x.body.userId, d.workspaceUserId);
    t.equal(x.body.workspaceId, d.workspaceId);
    t.match(x.body.botId, /^bot_/);
  });

  t.test('a trailing slash reaches the same token handler', async (t) => {
    const g = await grant(d, app);
    const form = new FormData();
    for (const [k, v] of Object.entries({ 'client-id': app.id, 'client-secret': app.clientSecret, code: g.body.code }))
      form.append(k, v);
    const res = await fetch(`${d.url}/oauth2/access/`, { method: 'POST', body: form });
    t.equal(res.status, 200);
    t.equal(res.headers.get('cache-control'), 'no-store');
    t.match(((await res.json()) as { accessToken: string }).accessToken, /^aut_/);
    const again = await fetch(`${d.url}/oauth2/access/`, { method: 'POST', body: form });
    t.equal(again.status, 400);
  });

  t.test(
    'a multipart form of any shape multer reads is read alike (the plain shape is parsed at once, others by multer)',
    async (t) => {
      const part = (name: string, value: string, extra = '') =>
        `Content-Disposition: form-data; name="${name}"\r\n${extra}\r\n${value}`;
      const body = (b: string, parts: string[], preamble = '') =>
        `${preamble}${parts.map((p) => `--${b}\r\n${p}\r\n`).join('')}--${b}--\r\n`;
      const post = async (type: string, payload: string | ReadableStream<Uint8Array>) => {
        const res = await fetch(`${d.url}/oauth2/access`, {
          method: 'POST',
          headers: { 'content-type': type },
          body: payload,
          ...(typeof payload === 'string' ? {} : { duplex: 'half' }),
        } as RequestInit);
        return { status: res.status, body: (await res.json()) as { accessToken?: string; code?: string } };
      };
      const fields = async () => {
        const g = await grant(d, app);
        return { 'client-id': app.id, 'client-secret': app.clientSecret, code: g.body.code as string };
      };
      const plain = (f: Record<string, string>, extra = '') => Object.entries(f).map(([k, v]) => part(k, v, extra));

      let f = await fields();
      let x = await post('multipart/form-data; boundary="b-1"', body('b-1', plain(f)));
      t.equal(x.status, 200, 'a quoted boundary');
      t.match(x.body.accessToken, /^aut_/);
      f = await fields();
      x = await post(
        'multipart/form-data; boundary=b2',
        body('b2', plain(f, 'Content-Type: text/plain; charset=utf-8\r\n')),
      );
      t.equal(x.status, 200, 'parts with a Content-Type of their own (multer)');
      f = await fields();
      // streamed (no content-length): 63,000 bytes of preamble, then the form, so that the first 64 KiB
      // read hold its start and multer is handed them, then the rest
      const chunked = (text: string, size: number) => {
        const bytes = new TextEncoder().encode(text);
        return new ReadableStream<Uint8Array>({
          start(c) {
            for (let i = 0; i < bytes.length; i += size) c.enqueue(bytes.subarray(i, i + size));
            c.close();
          },
        });
      };
      x = await post(
        'multipart/form-data; boundary=b3',
        chunked(body('b3', [...plain(f), part('pad', 'p'.repeat(3000))], 'x'.repeat(63_000) + '\r\n'), 16_384),
      );
      t.equal(x.status, 200, 'a streamed body larger than is read whole');
      f = await fields();
      x = await post(
        'multipart/form-data; boundary=b3',
        body('b3', [...plain(f), part('pad', 'p'.repeat(3000))], 'x'.repeat(63_000) + '\r\n'),
      );
      t.equal(x.status, 200, 'a body whose length is over what is read whole (multer reads it all)');
      f = await fields();
      x = await post('multipart/form-data; boundary=b4', chunked(body('b4', plain(f)), 7));
      t.equal(x.status, 200, 'a body sent in small chunks');
      f = await fields();
      x = await post('multipart/form-data; boundary=b5', body('b5', [...plain(f), part('code', f.code)]));
      t.equal(x.status, 400, 'a field given twice');
      t.equal(x.body.code, 'invalid_request');
      x = await post(
        'multipart/form-data; boundary=b6',
        body(
          'b6',
          Array.from({ length: 16 }, (_, i) => part(`f${i}`, 'y'.repeat(4096))),
        ),
      );
      t.equal(x.status, 400, 'too many fields, in a body larger than is read whole');
      x = await post('multipart/form-data; boundary=b7', body('b7', [part('code', 'z'.repeat(4097))]));
      t.equal(x.status, 413, 'a field one byte over the limit');
      f = await fields();
      x = await post('multipart/form-data; boundary=b8', body('b8', plain({ ...f, code: f.code + 'é' })));
      t.equal(x.status, 400, 'a value that is not ASCII (multer): no such code');
      t.equal(x.body.code, 'invalid_grant');
    },
  );

  t.test('simpleForm takes only the plain shape, else leaves the body to multer', async (t) => {
    const { simpleForm } = await import('../../src/server/routes/token-form.js');
    const B = 'zz';
    const form = (s: string) => simpleForm(Buffer.from(s, 'latin1'), B);
    const p = (n: string, v: string) => `--${B}\r\nContent-Disposition: form-data; name="${n}"\r\n\r\n${v}\r\n`;
    t.same(form(`${p('a', '1')}${p('b', '')}--${B}--\r\n`), { a: '1', b: '' });
    t.same(form(`${p('a', 'x\r\n--z')}--${B}--`), { a: 'x\r\n--z' }, 'a value holding the start of the delimiter');
    for (const [why, s] of [
      ['a preamble', `x\r\n${p('a', '1')}--${B}--`],
      ['an epilogue', `${p('a', '1')}--${B}--\r\nmore`],
      ['a file', `--${B}\r\nContent-Disposition: form-data; name="a"; filename="f"\r\n\r\n1\r\n--${B}--`],
      [
        'a second header',
        `--${B}\r\nContent-Disposition: form-data; name="a"\r\nContent-Type: text/plain\r\n\r\n1\r\n--${B}--`,
      ],
      ['a name twice', `${p('a', '1')}${p('a', '2')}--${B}--`],
      ['a bracketed name', `${p('a[b]', '1')}--${B}--`],
      ['a byte over 127', `${p('a', '\u00e9')}--${B}--`],
      ['a value over 4,096 bytes', `${p('a', 'v'.repeat(4097))}--${B}--`],
      ['eleven fields', `${Array.from({ length: 11 }, (_, i) => p(`f${i}`, '1')).join('')}--${B}--`],
      ['no closing delimiter', `${p('a', '1')}`],
      ['text after a delimiter', `--${B}\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--${B}x\r\n--${B}--`],
    ] as const)
      t.equal(form(s), undefined, why);
  });

  t.test('urlencoded with the same names works too', async (t) => {
    const g = await grant(d, app);
    const x = await exchange(
      d,
      { 'client-id': app.id, 'client-secret': app.clientSecret, code: g.body.code },
      'urlencoded',
    );
    t.equal(x.res.status, 200);
    t.match(x.body.accessToken, /^aut_/);
  });

  t.test('errors: invalid_request 400, invalid_client 401, invalid_grant 400, 415, field limits', async (t) => {
    const g = await grant(d, app);
    const other = await createApp(d);
    let x = await exchange(d, { 'client-id': app.id, code: g.body.code });
    t.equal(x.res.status, 400);
    t.equal(x.body.code, 'invalid_request');
    t.equal(x.res.headers.get('cache-control'), 'no-store');
    x = await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret + 'x', code: g.body.code });
    t.equal(x.res.status, 401);
    t.equal(x.body.code, 'invalid_client');
    x = await exchange(d, { 'client-id': 'app_unknown', 'client-secret': app.clientSecret, code: g.body.code });
    t.equal(x.res.status, 401);
    t.equal(x.body.code, 'invalid_client');
    x = await exchange(d, { 'client-id': other.id, 'client-secret': other.clientSecret, code: g.body.code });
    t.equal(x.res.status, 400, "another app's code");
    t.equal(x.body.code, 'invalid_grant');
    x = await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code: 'acd_nope' });
    t.equal(x.body.code, 'invalid_grant');
    for (const m of [x.body.message, JSON.stringify(x.body)]) t.notMatch(m, g.body.code, 'no code in the error');
    // the failed attempts did not consume the code
    x = await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code: g.body.code });
    t.equal(x.res.status, 200);

    let res = await fetch(`${d.url}/oauth2/access`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: 'x' }),
    });
    t.equal(res.status, 415);
    const withFile = new FormData();
    withFile.append('client-id', app.id);
    withFile.append('code', new Blob(['x']), 'x.txt');
    res = await fetch(`${d.url}/oauth2/access`, { method: 'POST', body: withFile });
    t.equal(res.status, 400, 'no files accepted');
    t.equal(((await res.json()) as { code: string }).code, 'invalid_request');
    const big = new FormData();
    big.append('code', 'x'.repeat(5000));
    res = await fetch(`${d.url}/oauth2/access`, { method: 'POST', body: big });
    t.equal(res.status, 413, 'field size capped');
    const many = new FormData();
    for (let i = 0; i < 12; i++) many.append(`f${i}`, 'x');
    res = await fetch(`${d.url}/oauth2/access`, { method: 'POST', body: many });
    t.equal(res.status, 400, 'field count capped');
  });

  t.test(
    'each invalid_grant refusal logs its reason and sends none: the client gets one message whatever was wrong',
    async (t) => {
      const other = await createApp(d);
      const send = (code: string, a = app) => exchange(d, { 'client-id': a.id, 'client-secret': a.clientSecret, code });
      const generic = 'The authorization code is unknown, expired or already used.';
      const cases: Array<[string, () => Promise<{ body: any }>]> = [
        ['no such code', () => send('acd_never_issued')],
        ['issued to another app', async () => send((await grant(d, app)).body.code, other)],
        [
          'already exchanged',
          async () => {
            const g = await grant(d, app);
            await send(g.body.code);
            return send(g.body.code);
          },
        ],
        [
          'has expired',
          async () => {
            const g = await grant(d, app);
            const t0 = clock.now();
            clock.set(t0 + d.parts.config.codeTtlSeconds * 1000 + 1);
            try {
              return await send(g.body.code);
            } finally {
              clock.set(t0);
            }
          },
        ],
        [
          'no longer exists',
          async () => {
            const g = await grant(d, app);
            const rec = must(await d.parts.store.get(OAUTH_TABLES.codes, sha256(g.body.code)));
            await d.parts.store.commit([
              {
                table: OAUTH_TABLES.codes,
                id: rec.id,
                value: { ...rec, workspaceUserId: 'wu_gone', authorizationId: undefined },
              },
            ]);
            return send(g.body.code);
          },
        ],
      ];
      for (const [reason, run] of cases) {
        const before = d.logs().length;
        const x = await run();
        t.same(x.body, { code: 'invalid_grant', message: generic }, `${reason}: the wire body is the one message`);
        const refusal = logLines(d, before).find((l) => l.msg === 'token exchange refused: invalid_grant');
        t.match(refusal?.reason, new RegExp(reason), `${reason}: the log line says why`);
        t.notMatch(JSON.stringify(x.body), String(refusal?.reason), `${reason}: the reason is not sent`);
      }
    },
  );

  t.test(
    'codes expire (configurable, ≤ 10 min) and are bound to app, user, workspace, scopes and redirect URL',
    async (t) => {
      const g = await grant(d, app, { scopes: 'messages:read,bot:messages:read' });
      const rec = await d.parts.store.get(OAUTH_TABLES.codes, sha256(g.body.code));
      if (!rec || 'consumedAt' in rec) return t.fail('stored under its digest, not exchanged');
      t.same(
        [rec.appId, rec.workspaceId, rec.workspaceUserId, rec.userScopes, rec.botScopes, rec.redirectUrl],
        [app.id, d.workspaceId, d.workspaceUserId, ['messages:read'], ['messages:read'], 'http://localhost:9/redirect'],
      );
      const t0 = clock.now();
      t.equal(rec.expiresAt - t0, d.parts.config.codeTtlSeconds * 1000);
      t.notMatch(JSON.stringify(rec), g.body.code, 'the code itself is not stored');
      clock.set(t0 + d.parts.config.codeTtlSeconds * 1000 + 1);
      const x = await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code: g.body.code });
      t.equal(x.res.status, 400);
      t.equal(x.body.code, 'invalid_grant');
      clock.set(t0);
    },
  );

  t.test(
    'a code names the installation and authorization its exchange reads; one that does not is exchanged all the same',
    async (t) => {
      const g = await grant(d, app);
      const rec = must(await d.parts.store.get(OAUTH_TABLES.codes, sha256(g.body.code)));
      t.match(rec, { installationId: /^\w+_/, authorizationId: /^\w+_/ }, 'read with the code, in one round trip');
      const first = await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code: g.body.code });
      t.equal(first.res.status, 200);
      // a code minted before codes named them (or naming ids that are not this exchange's): read them apart
      for (const strip of [
        { installationId: undefined, authorizationId: undefined },
        { installationId: 'ins_x', authorizationId: 'az_x' },
      ]) {
        const g2 = await grant(d, app);
        const r2 = must(await d.parts.store.get(OAUTH_TABLES.codes, sha256(g2.body.code)));
        await d.parts.store.commit([{ table: OAUTH_TABLES.codes, id: r2.id, value: { ...r2, ...strip } }]);
        const x = await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code: g2.body.code });
        t.equal(x.res.status, 200);
        t.equal(x.body.botId, first.body.botId, 'the same installation and bot user');
        t.equal(x.body.botToken, first.body.botToken, 'its bot token kept');
        t.equal((await me(d, must(x.body.accessToken), app.appKey)).status, 200);
      }
    },
  );

  t.test(
    '50 concurrent exchanges of one code: exactly one succeeds; after the reuse its tokens no longer work',
    async (t) => {
      const g = await grant(d, app);
      const results = await Promise.all(
        Array.from({ length: 50 }, () =>
          exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code: g.body.code }),
        ),
      );
      const ok = results.filter((r) => r.res.status === 200);
      t.equal(ok.length, 1, 'exactly one 200');
      t.ok(results.filter((r) => r.res.status === 400).every((r) => r.body.code === 'invalid_grant'));
      t.equal(results.filter((r) => r.res.status === 400).length, 49);
      t.equal(
        (await me(d, must(must(ok[0]).body.accessToken), app.appKey)).status,
        401,
        'user token from the reused code revoked',
      );
      t.equal(
        (await me(d, must(must(ok[0]).body.botToken), app.appKey)).status,
        401,
        'bot token delivered for the reused code revoked',
      );
      // the installation recovers: the next authorization mints a fresh bot token
      const next = await authorize(d, app);
      t.not(next.botToken, must(ok[0]).body.botToken);
      t.equal((await me(d, must(next.botToken), app.appKey)).status, 200);
    },
  );

  t.test('a reused code (sequential) is refused and revokes what it issued', async (t) => {
    const g = await grant(d, app);
    const first = await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code: g.body.code });
    t.equal((await me(d, must(first.body.accessToken), app.appKey)).status, 200);
    const again = await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code: g.body.code });
    t.equal(again.res.status, 400);
    t.equal(again.body.code, 'invalid_grant');
    t.equal((await me(d, must(first.body.accessToken), app.appKey)).status, 401);
    t.match(first.body.botToken, /^abt_/, 'the exchange handed out a bot token');
    t.equal((await me(d, must(first.body.botToken), app.appKey)).status, 401, 'the bot token it handed out too');
    // the log says what was revoked and how the app recovers (a reload of its redirect page does this)
    const line = logLines(d).find((l) => /authorization code reused/.test(String(l.msg)));
    t.match(line, { level: 'warn', revoked: { accessTokens: 1, botToken: true } });
    t.match(line?.msg, /revoked the user's access token and the installation's bot token/, 'names what was revoked');
    t.match(line?.msg, /authorize it again/, 'and how the app recovers');
  });

  t.test(
    'a code reused after its own expiry and the sweep is still recognised and revokes; forgotten after a day',
    async (t) => {
      const g = await grant(d, app);
      const first = await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code: g.body.code });
      t.equal(first.res.status, 200);
      const oauth = d.parts.oauth.codes;
      clock.set(clock.now() + 15 * 60_000); // well past the 2-minute code lifetime
      await oauth.sweep();
      t.ok(await d.parts.store.get(OAUTH_TABLES.codes, sha256(g.body.code)), 'the consumed code is still remembered');
      const again = await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code: g.body.code });
      t.equal(again.body.code, 'invalid_grant');
      t.equal(
        (await me(d, must(first.body.accessToken), app.appKey)).status,
        401,
        'the late replay revoked the user token',
      );
      clock.set(clock.now() + 24 * 3600_000);
      await oauth.sweep();
      t.equal(
        await d.parts.store.get(OAUTH_TABLES.codes, sha256(g.body.code)),
        undefined,
        'forgotten a day after its exchange',
      );
    },
  );

  t.test('after its first sweep a daemon reads only the codes of the minutes that ended, not every code', async (t) => {
    const oauth = d.parts.oauth.codes;
    const store = d.parts.store;
    await oauth.sweep(); // the first sweep of this daemon may read every code
    const engine = engineOf(store);
    const { all, scan } = { all: engine.all.bind(engine), scan: engine.scan.bind(engine) };
    let full = 0;
    let scans = 0;
    engine.all = (table) => {
      if (table === OAUTH_TABLES.codes) full++;
      return all(table);
    };
    engine.scan = (table, visit) => {
      if (table === OAUTH_TABLES.codes) scans++;
      return scan(table, visit);
    };
    t.teardown(() => {
      engine.all = all;
      engine.scan = scan;
    });
    const g = await grant(d, app);
    t.ok(await store.get(OAUTH_TABLES.codes, sha256(g.body.code)), 'an unused code is kept');
    await oauth.sweep();
    t.ok(await store.get(OAUTH_TABLES.codes, sha256(g.body.code)), 'not yet expired: kept');
    clock.set(clock.now() + 3 * 60_000); // past the 2-minute lifetime
    t.ok((await oauth.sweep()) >= 1);
    t.equal(await store.get(OAUTH_TABLES.codes, sha256(g.body.code)), undefined, 'the expired code is gone');
    t.equal(full + scans, 0, 'found by its sweep minute: no sweep read the whole table');
    // after a gap longer than a sweep reads minute by minute, every code is read again: one at a
    // time (a scan), never all of them parsed at once
    const late = await grant(d, app);
    clock.set(clock.now() + 26 * 3600_000);
    t.ok((await oauth.sweep()) >= 1);
    t.equal(
      await store.get(OAUTH_TABLES.codes, sha256(late.body.code)),
      undefined,
      'the code expired during the gap is gone',
    );
    t.same({ full, scans }, { full: 0, scans: 1 }, 'the whole table scanned once, never read whole');
  });

  t.test(
    'the bot token: same on every authorization, reinstall mints a new one and the old fails at once',
    async (t) => {
      const app2 = await createApp(d, { botTitle: 'Bot of app 2' });
      const a = await authorize(d, app2);
      const b = await authorize(d, app2);
      t.equal(b.botToken, a.botToken, 'current bot token returned again');
      t.equal(b.botId, a.botId);
      t.not(b.accessToken, a.accessToken);
      const meBot = (await (await me(d, must(a.botToken), app2.appKey)).json()) as Record<string, string>;
      t.same(meBot, {
        workspaceId: d.workspaceId,
        workspaceName: 'Local workspace',
        workspaceUserId: a.botId,
        workspaceUserName: 'Test App',
      });
      const r = await authorize(d, app2, { isReinstall: true });
      t.not(r.botToken, a.botToken);
      t.equal(r.botId, a.botId, 'same bot user');
      t.equal((await me(d, must(a.botToken), app2.appKey)).status, 401, 'old bot token fails at once');
      t.equal((await me(d, must(r.botToken), app2.appKey)).status, 200, 'new bot token works');
      t.equal((await me(d, a.accessToken, app2.appKey)).status, 200, 'user tokens survive a reinstall');
    },
  );

  t.test(
    'an exchange in a workspace the app is installed in reads five records at once, not the bot user',
    async (t) => {
      const app3 = await createApp(d);
      const first = await authorize(d, app3);
      const store = d.parts.store;
      const getMany = store.getMany.bind(store);
      const reads: string[][] = [];
      store.getMany = (keys, opts) => {
        reads.push(keys.map((k) => k.table));
        return getMany(keys, opts);
      };
      t.teardown(() => void (store.getMany = getMany));
      const again = await authorize(d, app3);
      store.getMany = getMany;
      const exchangeRead = reads.find((r) => r.includes(OAUTH_TABLES.codes));
      t.same(
        exchangeRead,
        ['apps', OAUTH_TABLES.codes, 'workspaceUsers', OAUTH_TABLES.installations, OAUTH_TABLES.authorizations],
        'the app, the code and the three records it names',
      );
      t.equal(again.botId, first.botId, 'the bot user named by the installation');
      t.equal(again.botToken, first.botToken);
    },
  );

  t.test('an app without a bot gets no botToken', async (t) => {
    const nb = await createApp(d, { bot: false, scopes: { botScopes: [], userScopes: ['messages:read'] } });
    const x = await authorize(d, nb, { scopes: 'messages:read' });
    t.equal(x.botToken, undefined);
    t.equal(x.botId, undefined);
  });

  t.test('tokens need the appKey of their own app (docs/protocol.md §4)', async (t) => {
    const other = await createApp(d);
    const x = await authorize(d, app);
    t.equal((await me(d, x.accessToken, app.appKey)).status, 200);
    const body = (await (await me(d, x.accessToken, app.appKey)).json()) as Record<string, string>;
    t.same(body, {
      workspaceId: d.workspaceId,
      workspaceName: 'Local workspace',
      workspaceUserId: d.workspaceUserId,
      workspaceUserName: 'Owner',
    });
    const wrong = await me(d, x.accessToken, other.appKey);
    t.equal(wrong.status, 401);
    t.equal(((await wrong.json()) as { code: string }).code, 'unauthenticated');
    t.equal((await me(d, x.accessToken, '')).status, 401);
    t.equal((await fetch(`${d.url}/oauth2/me`, { headers: { 'x-app-token': app.appKey } })).status, 401);
    t.equal((await me(d, 'aut_forged', app.appKey)).status, 401);
    const svc = d.parts.oauth.appTokens;
    t.same(await svc.authenticate(x.accessToken, app.appKey), {
      appId: app.id,
      workspaceId: d.workspaceId,
      workspaceUserId: d.workspaceUserId,
      kind: 'user',
      scopes: ['messages:read'],
    });
    await t.rejects(svc.authenticate(x.accessToken, other.appKey), { code: 'unauthenticated' });
    t.equal((await svc.authenticate(x.botToken, app.appKey)).kind, 'bot');
    t.same((await svc.authenticate(x.botToken, app.appKey)).scopes, ['messages:read', 'messages:write']);
  });

  t.test(
    "the client secret's digest, kept for exchanges, stays out of the app's JSON; a rotated secret is the one checked",
    async (t) => {
      const a = await createApp(d);
      await authorize(d, a); // the digest is made and kept
      const got = (await (await d.api(`${d.mgmt}/apps/mine/${a.id}`)).json()) as Record<string, unknown>;
      t.same(Object.keys(got).sort(), Object.keys(a).sort(), 'the same keys as the create answer');
      t.equal(got.clientSecret, a.clientSecret);
      const rotated = (await (await d.api(`${d.mgmt}/apps/${a.id}/secrets/rotate`, { method: 'PUT' })).json()) as {
        clientSecret: string;
      };
      const g = await grant(d, a);
      const old = await exchange(d, { 'client-id': a.id, 'client-secret': a.clientSecret, code: g.body.code });
      t.equal(old.res.status, 401, 'the old secret no longer authenticates');
      const now = await exchange(d, { 'client-id': a.id, 'client-secret': rotated.clientSecret, code: g.body.code });
      t.equal(now.res.status, 200, 'the new one does');
    },
  );

  t.test('user tokens are stored only as digests; the bot token is sealed at rest', async (t) => {
    const x = await authorize(d, await createApp(d));
    const all = await storedText(d);
    t.ok(all.includes(sha256(x.accessToken)), 'the digest is stored');
    t.notOk(all.includes(x.accessToken), 'the access token is not');
    t.notOk(all.includes(must(x.botToken)), 'the bot token is not in clear');
    t.notOk(all.includes(x.code), 'the code is not');
  });

  t.test('a malformed multipart body is a 400, not a 500; the response still carries a request id', async (t) => {
    const res = await fetch(`${d.url}/oauth2/access`, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data' },
      body: 'garbage',
    });
    t.equal(res.status, 400);
    t.equal(((await res.json()) as { code: string }).code, 'invalid_request');
    t.match(res.headers.get('x-request-id'), /^[0-9a-f]{16}$/);
    t.equal(res.headers.get('cache-control'), 'no-store');
    const cut = await fetch(`${d.url}/oauth2/access`, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=xyz' },
      body: '--xyz\r\nContent-Disposition: form-data; name="code"\r\n\r\nabc',
    });
    t.equal(cut.status, 400, 'truncated multipart');
  });

  t.test('a code never lives longer than 10 minutes, whatever the configuration says', async (t) => {
    const d2 = await startTestDaemon({ config: { codeTtlSeconds: 3600 }, clock });
    t.teardown(() => d2.stop());
    const app2 = await createApp(d2);
    const g = await grant(d2, app2);
    const rec = must(await d2.parts.store.get(OAUTH_TABLES.codes, sha256(g.body.code)));
    t.equal(rec.expiresAt - clock.now(), 600_000);
  });

  t.test('the token endpoint is rate limited (429 + Retry-After)', async (t) => {
    const d2 = await startTestDaemon({ config: { rateLimitTokenEndpoint: 3 } });
    t.teardown(() => d2.stop());
    const statuses = [];
    for (let i = 0; i < 5; i++)
      statuses.push((await exchange(d2, { 'client-id': 'app_x', 'client-secret': 's', code: 'c' })).res);
    t.same(
      statuses.map((r) => r.status),
      [401, 401, 401, 429, 429],
    );
    t.ok(Number(must(statuses[3]).headers.get('retry-after')) >= 1);
  });
});
