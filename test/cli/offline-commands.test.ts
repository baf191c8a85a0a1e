/**
 * Issue 10, CLI items that need no daemon: --version (24), the exit code table (23, 24),
 * apps validate's error shape and exit 7 (23), apps init (26), the log formats (28), and how
 * deliveries show renders replays, schedules, cancellations and unkept payloads (20, 21).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { Chalk } from 'chalk';
import { ROOT, runMain } from '../helpers/cli.js';
import { tempDir } from '../helpers/daemon.js';
import { createLogger } from '../../src/logger.js';
import { describe } from '../../src/cli/delivery-view.js';
import type { Delivery } from '../../src/client/delivery.js';

const work = tempDir('appreg-offline-');
t.teardown(() => fs.rmSync(work, { recursive: true, force: true }));
const at = (f: string) => path.join(work, f);

t.test('--version and -V print the version in package.json', async (t) => {
  const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  for (const flag of ['--version', '-V']) {
    const r = await runMain([flag]);
    t.equal(r.code, 0);
    t.equal(r.stdout, `${version}\n`, flag);
  }
});

t.test('--help documents every exit code, 7 and 8 included', async (t) => {
  const r = await runMain(['--help']);
  for (const code of [
    '0 ok',
    '2 usage',
    '4 rejected by the daemon',
    '6 a delivery test failed',
    '7 invalid manifest',
    '8 another daemon holds the data directory',
  ])
    t.match(r.stdout, code);
  t.match((await runMain(['serve', '--help'])).stdout, /8 another daemon\s+holds the data directory/);
});

t.test(
  'apps validate: an invalid manifest exits 7 with the common error shape; not JSON exits 7; unreadable exits 2',
  async (t) => {
    fs.writeFileSync(at('bad.json'), JSON.stringify({ name: 'x', nmae: 'typo' }));
    const human = await runMain(['apps', 'validate', '--file', at('bad.json')]);
    t.equal(human.code, 7);
    t.match(human.stderr, /\/nmae/);
    t.equal(human.stdout, '');
    const json = await runMain(['apps', 'validate', '--file', at('bad.json'), '--json']);
    t.equal(json.code, 7);
    const body = JSON.parse(json.stdout);
    t.match(body, {
      error: {
        code: 'invalid_manifest',
        message: /not a valid manifest/,
        details: [{ pointer: String, message: String }],
      },
      exitCode: 7,
    });
    t.notOk('valid' in body, 'no {valid:false} shape any more');
    t.ok(body.error.details.some((d: { pointer: string }) => d.pointer === '/nmae'));
    fs.writeFileSync(at('notjson.json'), '{nope');
    const nj = await runMain(['apps', 'validate', '--file', at('notjson.json'), '--json']);
    t.equal(nj.code, 7);
    t.match(JSON.parse(nj.stdout), { error: { code: 'invalid_json' }, exitCode: 7 });
    t.equal((await runMain(['apps', 'validate', '--file', at('missing.json')])).code, 2);
  },
);

t.test(
  'apps init writes a starter with $schema that validates as written, HTTP and socket; no overwrite without --force',
  async (t) => {
    const schema = JSON.parse(fs.readFileSync(path.join(ROOT, 'schemas/app-manifest.schema.json'), 'utf8'));
    for (const [file, extra] of [
      ['http.json', []],
      ['socket.json', ['--socket']],
    ] as const) {
      const init = await runMain(['apps', 'init', '--name', 'Standup Bot', '--out', at(file), ...extra]);
      t.equal(init.code, 0, init.stderr);
      const m = JSON.parse(fs.readFileSync(at(file), 'utf8'));
      t.equal(m.$schema, schema.$id, "$schema is the schema's $id");
      t.equal(m.displayName, 'Standup Bot');
      t.equal(m.socketMode === true, extra.length > 0, 'socket mode only with --socket');
      const v = await runMain(['apps', 'validate', '--file', at(file)]);
      t.equal(v.code, 0, `${file} validates: ${v.stderr}`);
      t.equal(v.stderr, '', 'not even a warning');
    }
    const before = fs.readFileSync(at('http.json'), 'utf8');
    const again = await runMain(['apps', 'init', '--out', at('http.json'), '--name', 'Other']);
    t.equal(again.code, 2);
    t.match(again.stderr, /already exists; give --force/);
    t.equal(fs.readFileSync(at('http.json'), 'utf8'), before, 'left unchanged');
    const forced = await runMain(['apps', 'init', '--out', at('http.json'), '--name', 'Other', '--force', '--json']);
    t.equal(forced.code, 0, forced.stderr);
    t.equal(JSON.parse(forced.stdout).manifest.displayName, 'Other');
    t.equal(JSON.parse(fs.readFileSync(at('http.json'), 'utf8')).displayName, 'Other');
    const cwdDefault = await runMain(['apps', 'init'], { cwd: work });
    t.equal(cwdDefault.code, 0);
    t.ok(fs.existsSync(at('manifest.json')), 'manifest.json in the working directory by default');
    const nested = await runMain(['apps', 'init', '--out', 'tmp/new/hello.json'], { cwd: work });
    t.equal(nested.code, 0, nested.stderr);
    t.ok(fs.existsSync(at('tmp/new/hello.json')), "--out's folder is made");
  },
);

t.test('the log: JSON lines by default and with format json; one human line with pretty', async (t) => {
  let json = '';
  createLogger({ stream: { write: (s: string) => (json += s) } }).warn('fetch failed', {
    url: 'http://x.invalid',
    code: 'ENOTFOUND',
  });
  t.match(JSON.parse(json), { level: 'warn', msg: 'fetch failed', url: 'http://x.invalid' });
  let pretty = '';
  const log = createLogger({ format: 'pretty', stream: { write: (s: string) => (pretty += s) } }).child({ req: 'r1' });
  log.info('listening on http://127.0.0.1:1', { token: 'aut_abcdefghijklmnopqrstu', n: 3 });
  t.match(pretty, /^\d\d:\d\d:\d\d\.\d{3} INFO  listening on http:\/\/127\.0\.0\.1:1 req=r1 token=\[redacted\] n=3\n$/);
  pretty = '';
  log.error('request failed', { error: 'Error: boom\n    at x (y.js:1:1)' });
  t.match(
    pretty,
    /^\S+ ERROR request failed req=r1\n    error: Error: boom\n        at x/,
    'a stack goes below, indented',
  );
  t.throws(() => JSON.parse(pretty));
});

t.test(
  'deliveries show: replays marked, next attempt only while retrying, cancel reason, payload not kept',
  async (t) => {
    const c = new Chalk({ level: 0 });
    const attempt = { id: 'a', at: '2026-01-01T00:00:00.000Z', latencyMs: 5, outcome: 'error', status: 500 };
    const base: Delivery = {
      id: 'dlv_1',
      kind: 'event',
      appId: 'app_1',
      appName: 'a',
      transport: 'http',
      url: 'http://127.0.0.1:9/e',
      state: 'retrying',
      payload: { x: 1 },
      createdAt: '2026-01-01T00:00:00.000Z',
      nextAttemptAt: '2026-01-01T00:01:00.000Z',
      attempts: [
        { ...attempt, retryNum: 0 },
        { ...attempt, retryNum: 0, replay: true, outcome: 'acked', status: 200 },
      ],
    };
    const retrying = describe(c, base);
    t.match(retrying, /next attempt\s+2026-01-01T00:01:00/);
    t.match(retrying, /^0 \(replay\)\s/m, 'the replayed attempt is marked');
    t.notMatch(describe(c, { ...base, state: 'failed' }), /next attempt/, 'no next attempt once failed');
    const cancelled = describe(c, { ...base, state: 'cancelled', cancelReason: 'cancelled by its owner' });
    t.match(cancelled, /state\s+cancelled \(cancelled by its owner\)/);
    t.notMatch(cancelled, /next attempt/);
    const restarted = describe(c, { ...base, kind: 'slash-command', state: 'delivered', payload: null });
    t.match(restarted, /payload not kept/);
    t.notMatch(restarted, /^null$/m, 'no literal null');
  },
);

t.test('an error code under "code" is logged; an OAuth code is not', async (t) => {
  let json = '';
  const log = createLogger({ stream: { write: (s: string) => (json += s) } });
  log.warn('Could not fetch http://127.0.0.1:9/manifest: ECONNREFUSED.', { code: 'manifest_unavailable' });
  log.warn('errno', { code: 'ECONNREFUSED' });
  log.warn('exchange', { code: 'acd_Abcdefghijklmnopqrstuvwxyz012345' });
  log.warn('exchange', { code: 'abcdefghijklmnopqrstuvwxyzABCDEF0123' });
  const lines = json
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { code: string });
  t.same(
    lines.map((l) => l.code),
    ['manifest_unavailable', 'ECONNREFUSED', '[redacted]', '[redacted]'],
  );
});

t.test('apps init: any accepted --name gives a valid manifest; an overlong one is a usage error', async (t) => {
  const long = 'Ünïcode & Sons: the very long standup reminder bot!!'.padEnd(60, 'x');
  t.equal((await runMain(['apps', 'init', '--name', long, '--out', at('long.json')])).code, 0);
  const v = await runMain(['apps', 'validate', '--file', at('long.json')]);
  t.equal(v.code, 0, v.stderr);
  t.equal((await runMain(['apps', 'init', '--name', 'x'.repeat(61), '--out', at('toolong.json')])).code, 2);
  t.equal((await runMain(['apps', 'init', '--name', '  ', '--out', at('blank.json')])).code, 2);
  t.notOk(fs.existsSync(at('toolong.json')));
});
