import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { tempDir } from '../helpers/daemon.js';
import { createLogger } from '../../src/logger.js';
import { openFileDeliveryLog } from '../../src/delivery/file-log.js';
import type { LogEntry } from '../../src/delivery/log.js';
import { createEgressPolicy } from '../../src/delivery/egress.js';
import { signature, signedHeaders } from '../../src/delivery/sign.js';
import { classifyAnswer } from '../../src/delivery/http-transport.js';
import { buildPayload } from '../../src/delivery/payloads.js';
import { initialChannelId } from '../../src/model/workspace.js';
import type { AppRecord } from '../../src/model/identity.js';
import { retryable, parseSchedule } from '../../src/delivery/retry-policy.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';
import { begunEvent } from '../helpers/log-entries.js';

const quiet = createLogger({ level: 'error', stream: { write: () => {} } });

/** Delivery i, created and ended at `at` (odd ones failed), in one entry. */
function rec(i: number, at: string): LogEntry {
  return {
    ...begunEvent(`dlv_${i}`, at, { n: i, pad: 'x'.repeat(500) }),
    attempt: { id: `att_${i}`, at, retryNum: 0, latencyMs: 1, outcome: i % 2 ? 'http_error' : 'acked' },
    state: { at, state: i % 2 ? 'failed' : 'delivered' },
  };
}

t.test('delivery log: bounded in size, newest kept, read back after reopening, 0600 files', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const clock = createTestClock();
  const log = openFileDeliveryLog({ dir, maxBytes: 256 * 1024, retentionDays: 7, clock, logger: quiet });
  const now = new Date(clock.now()).toISOString();
  for (let i = 0; i < 2000; i++) {
    log.append(rec(i, now));
    if (i % 100 === 0) await log.flush();
  }
  await log.close();
  const files = fs.readdirSync(dir);
  const total = files.reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
  t.ok(total <= 256 * 1024 + 64 * 1024, `total ${total} bytes stays near the 256 KiB bound`);
  t.ok(files.length > 1, 'rotated into several files');
  for (const f of files) t.equal(fs.statSync(path.join(dir, f)).mode & 0o777, 0o600, `${f} is 0600`);
  const again = openFileDeliveryLog({ dir, maxBytes: 256 * 1024, retentionDays: 7, clock, logger: quiet });
  t.match(
    await again.get('dlv_1999'),
    { id: 'dlv_1999', payload: { n: 1999 } },
    'the newest survives a reopen, payload intact',
  );
  t.equal(await again.get('dlv_0'), undefined, 'the oldest were dropped');
  const failed = await again.list({ ownerId: 'wu_1', failed: true, limit: 5 });
  t.same(
    failed.map((r) => r.id),
    ['dlv_1999', 'dlv_1997', 'dlv_1995', 'dlv_1993', 'dlv_1991'],
    'newest first, failed only',
  );
  t.same(await again.list({ ownerId: 'wu_other' }), [], "another user's deliveries are not listed");
  await again.close();
});

t.test(
  "delivery log: a delivery's beginning, each attempt and each state change are lines of their own, never rewritten; read back as the delivery they make",
  async (t) => {
    const dir = tempDir();
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    const clock = createTestClock();
    const log = openFileDeliveryLog({ dir, maxBytes: 1 << 20, retentionDays: 7, clock, logger: quiet });
    const base = clock.now();
    const at = (s: number) => new Date(base + s * 1000).toISOString();
    const first = rec(2, at(0));
    log.append({ id: first.id, begun: first.begun, state: { at: at(0), state: 'pending' } });
    const begun = await log.get('dlv_2');
    log.append({
      id: 'dlv_2',
      attempt: {
        id: 'att_a',
        at: at(1),
        retryNum: 0,
        latencyMs: 3,
        outcome: 'http_error',
        status: 503,
        url: 'http://127.0.0.1:9/a',
      },
      state: { at: at(1), state: 'retrying', nextAttemptAt: at(5) },
    });
    log.append({
      id: 'dlv_2',
      attempt: {
        id: 'att_b',
        at: at(5),
        retryNum: 1,
        latencyMs: 2,
        outcome: 'acked',
        status: 200,
        response: { ok: true },
        url: 'http://127.0.0.1:9/b',
      },
      state: { at: at(5), state: 'delivered' },
    });
    t.match(begun, { state: 'pending', attempts: [] }, 'what a read answered is not changed by later entries');
    const want = {
      id: 'dlv_2',
      state: 'delivered',
      outcome: 'acked',
      url: 'http://127.0.0.1:9/b',
      response: { ok: true },
      updatedAt: at(5),
      payload: { n: 2 },
    };
    const live = await log.get('dlv_2');
    t.match(live, want);
    t.same(
      must(live).attempts.map((a) => [a.id, a.retryNum, a.outcome]),
      [
        ['att_a', 0, 'http_error'],
        ['att_b', 1, 'acked'],
      ],
    );
    t.equal(must(live).nextAttemptAt, undefined, 'no next attempt once delivered');
    t.notOk(
      'response' in must(must(live).attempts[1]) || 'url' in must(must(live).attempts[1]),
      'an attempt shows what it showed before: the answer and the target are the delivery’s',
    );
    // an interactive call: one line, without its payload once delivered
    const call = rec(4, at(0));
    log.append({ ...call, begun: { ...must(call.begun), head: { ...must(call.begun).head, kind: 'slash-command' } } });
    await log.close();
    const lines = fs
      .readFileSync(path.join(dir, must(fs.readdirSync(dir)[0])), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    t.same(
      lines.map((l) => Object.keys(l).join(',')),
      ['id,begun,state', 'id,attempt,state', 'id,attempt,state', 'id,begun,attempt,state'],
      'one line per entry, appended',
    );
    t.equal(lines[3].begun.payload, null, 'a delivered trigger keeps no payload on disk');
    t.equal(lines[0].begun.payload.n, 2, 'an event keeps its payload');
    // a line an earlier appreg wrote (the whole delivery) is read as such, and later entries apply to it
    fs.appendFileSync(
      path.join(dir, must(fs.readdirSync(dir)[0])),
      JSON.stringify({
        id: 'dlv_9',
        kind: 'event',
        appId: 'app_1',
        appName: 'a',
        ownerId: 'wu_1',
        workspaceId: 'ws_1',
        userId: 'wu_1',
        transport: 'http',
        createdAt: at(0),
        updatedAt: at(0),
        state: 'retrying',
        payload: { n: 9 },
        attempts: [{ id: 'att_old', at: at(0), retryNum: 0, latencyMs: 1, outcome: 'timeout' }],
      }) + '\n',
    );
    const again = openFileDeliveryLog({ dir, maxBytes: 1 << 20, retentionDays: 7, clock, logger: quiet });
    t.teardown(() => again.close());
    t.match(await again.get('dlv_2'), want, 'read back as the entries make it');
    t.match(await again.get('dlv_4'), { kind: 'slash-command', state: 'delivered', payload: null });
    again.append({ id: 'dlv_9', state: { at: at(6), state: 'cancelled', cancelReason: 'cancelled by its owner' } });
    t.match(await again.get('dlv_9'), {
      state: 'cancelled',
      cancelReason: 'cancelled by its owner',
      attempts: [{ id: 'att_old' }],
    });
  },
);

t.test('delivery log: entries older than the retention are not read back', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const clock = createTestClock();
  const log = openFileDeliveryLog({ dir, maxBytes: 1 << 20, retentionDays: 1, clock, logger: quiet });
  log.append(rec(1, new Date(clock.now() - 3 * 86_400_000).toISOString()));
  log.append(rec(2, new Date(clock.now()).toISOString()));
  await log.close();
  fs.appendFileSync(path.join(dir, must(fs.readdirSync(dir)[0])), '{"torn": ');
  const again = openFileDeliveryLog({ dir, maxBytes: 1 << 20, retentionDays: 1, clock, logger: quiet });
  t.equal(await again.get('dlv_1'), undefined);
  t.ok(await again.get('dlv_2'), 'a torn last line is skipped, the rest read');
  await again.close();
});

t.test('egress policy: loopback, private, link-local, mapped and allow-listed addresses', async (t) => {
  const def = createEgressPolicy({ egressDenyPrivate: true, egressAllowLoopback: true, egressAllow: '' });
  t.equal(def.check('127.0.0.1'), undefined);
  t.equal(def.check('::1'), undefined);
  t.equal(def.check('93.184.216.34'), undefined, 'public');
  for (const ip of [
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    'fe80::1',
    'fd00::1',
    '::ffff:10.0.0.1',
    '0.0.0.0',
  ])
    t.match(def.check(ip), /not allowed/, ip);
  const strict = createEgressPolicy({
    egressDenyPrivate: true,
    egressAllowLoopback: false,
    egressAllow: '10.1.0.0/16, 192.168.7.7',
  });
  t.match(strict.check('127.0.0.1'), /loopback/);
  t.equal(strict.check('10.1.2.3'), undefined, 'allow-listed range');
  t.equal(strict.check('192.168.7.7'), undefined, 'allow-listed address');
  t.match(strict.check('10.2.0.1'), /private/);
  t.throws(
    () => createEgressPolicy({ egressDenyPrivate: true, egressAllowLoopback: true, egressAllow: 'nonsense' }),
    /egressAllow/,
  );
  // the lookup resolves once and refuses when every address is denied
  const err = await new Promise<Error | null>((resolve) => strict.lookup('localhost', {}, (e) => resolve(e)));
  t.match(err?.message, /localhost: loopback/);
  const ok = await new Promise<string>((resolve, reject) =>
    def.lookup('localhost', {}, (e, a) => (e ? reject(e) : resolve(String(a)))),
  );
  t.match(ok, /^(127\.0\.0\.1|::1)$/);
});

t.test('signing: hex HMAC-SHA256 of "timestamp:body", a fresh timestamp each call', async (t) => {
  // a vector computed outside Node (Python's hmac module)
  t.equal(
    signature('secret', '1700000000000', '{"a":1}'),
    '2771fa9d831c2c34306a777725c9743ffdedaf3030596bc7b488c970ff31f61c',
  );
  const crypto = await import('node:crypto');
  t.equal(signature('s3', '42', 'body'), crypto.createHmac('sha256', 's3').update('42:body').digest('hex'));
  const h = signedHeaders('s3', 'body', 1_700_000_000_123.7);
  t.same(h, {
    'x-pumble-request-timestamp': '1700000000123',
    'x-pumble-request-signature': crypto.createHmac('sha256', 's3').update('1700000000123:body').digest('hex'),
  });
});

t.test('answers are classified as the SDK gives them', async (t) => {
  t.match(classifyAnswer(200, '{}', true), { outcome: 'acked' });
  t.match(classifyAnswer(200, 'ok', false), { outcome: 'acked' });
  t.match(classifyAnswer(200, '{"message":"hi"}', true), { outcome: 'acked', message: 'hi' });
  t.match(classifyAnswer(500, '{"message":"broke"}', true), { outcome: 'nacked', message: 'broke' });
  t.match(classifyAnswer(503, 'busy', true), { outcome: 'http_error', status: 503 });
  t.match(classifyAnswer(403, 'Invalid signature!', true), { outcome: 'signature_rejected' });
  t.match(classifyAnswer(307, '', true), { outcome: 'redirect' });
  t.match(classifyAnswer(200, '{"view":{},"action":"OPEN","triggerId":"t","viewType":"MODAL"}', true), {
    outcome: 'response',
  });
  t.match(classifyAnswer(200, '{"onAction":"x","options":[]}', true), { outcome: 'response' });
});

t.test("a slash command's body, byte for byte (the bytes signed), in the workspace's general channel", async (t) => {
  const app = {
    id: 'app_1',
    manifest: { slashCommands: [{ command: '/ok', url: 'https://app.example.com/slash' }] },
  } as unknown as AppRecord;
  const body = (ws: string, f: Record<string, string>) => {
    const b = buildPayload('slash-command', app, { workspaceId: ws, userId: 'wu_1' }, f, 0);
    return JSON.stringify(b.payload).replace(/"triggerId":"[^"]+"/, '"triggerId":"T"');
  };
  for (const ws of ['ws_a', 'ws_b', 'ws_a']) {
    const general = initialChannelId(ws, 'general');
    t.equal(
      body(ws, { text: 'hi' }),
      `{"messageType":"SLASH_COMMAND","slashCommand":"/ok","text":"hi","workspaceId":"${ws}","userId":"wu_1","channelId":"${general}","triggerId":"T"}`,
    );
  }
  t.equal(
    body('ws_a', { text: '', channelId: 'ch_x', threadRootId: 'm_1' }),
    '{"messageType":"SLASH_COMMAND","slashCommand":"/ok","text":"","workspaceId":"ws_a","userId":"wu_1","channelId":"ch_x","threadRootId":"m_1","triggerId":"T"}',
  );
});

t.test('retry rules and schedule', async (t) => {
  t.ok(retryable({ outcome: 'connection_error', latencyMs: 0 }));
  t.ok(retryable({ outcome: 'timeout', latencyMs: 0 }));
  t.ok(retryable({ outcome: 'http_error', status: 503, latencyMs: 0 }));
  t.ok(retryable({ outcome: 'http_error', status: 429, latencyMs: 0 }));
  t.notOk(retryable({ outcome: 'http_error', status: 410, latencyMs: 0 }), '410 stops');
  t.notOk(retryable({ outcome: 'http_error', status: 404, latencyMs: 0 }));
  t.notOk(retryable({ outcome: 'signature_rejected', status: 403, latencyMs: 0 }));
  t.same(parseSchedule('1, 5,30'), [1, 5, 30]);
});
