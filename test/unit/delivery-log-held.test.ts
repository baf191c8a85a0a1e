import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { tempDir } from '../helpers/daemon.js';
import { createLogger } from '../../src/logger.js';
import { openFileDeliveryLog } from '../../src/delivery/file-log.js';
import { createHeldDeliveries } from '../../src/delivery/held-deliveries.js';
import { HeldTexts, MAX_HELD_TEXT } from '../../src/delivery/held-texts.js';
import { applyEntry, MAX_INDEXED, type LogEntry } from '../../src/delivery/log.js';
import type { DeliveryRecord } from '../../src/model/delivery.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';
import { begunEvent } from '../helpers/log-entries.js';

const quiet = createLogger({ level: 'error', stream: { write: () => {} } });
const clock = createTestClock();
const AT = new Date(clock.now()).toISOString();
const at = (s: number) => new Date(clock.now() + s * 1000).toISOString();

/** A slash command `id` of app `app`, begun, attempted and ended in one entry (`ok`: delivered, else failed). */
function call(id: string, createdAt: string, ok = true, app = 'app_1'): LogEntry {
  const payload = { messageType: 'SLASH_COMMAND', slashCommand: '/ok', text: `hi ${id}`, triggerId: `trg_${id}` };
  return {
    ...begunEvent(id, createdAt, payload, { kind: 'slash-command', subject: '/ok', appId: app }),
    attempt: {
      id: `att_${id}`,
      at: createdAt,
      retryNum: 0,
      latencyMs: 2,
      outcome: ok ? 'acked' : 'http_error',
      status: ok ? 200 : 500,
      signed: { timestamp: '1700000000', signature: 'ab'.repeat(32) },
      answerHeaders: [['content-type', 'application/json']],
      response: ok ? { text: 'done' } : undefined,
      url: 'http://127.0.0.1:9/slash',
    },
    state: { at: createdAt, state: ok ? 'delivered' : 'failed', ephemeralMessage: ok ? 'done' : 'offline' },
  };
}

const open = (dir: string) => openFileDeliveryLog({ dir, maxBytes: 1 << 26, retentionDays: 7, clock, logger: quiet });

t.test('held deliveries read as the entries make them, a new object at each read', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const log = open(dir);
  t.teardown(() => log.close());
  const entries: LogEntry[] = [
    { ...begunEvent('dlv_e', at(0), { n: 1, s: 'é "q"' }), state: { at: at(0), state: 'pending' } },
    {
      id: 'dlv_e',
      attempt: { id: 'att_1', at: at(1), retryNum: 0, latencyMs: 3, outcome: 'timeout', url: 'http://127.0.0.1:9/a' },
      state: { at: at(1), state: 'retrying', nextAttemptAt: at(9) },
    },
    {
      id: 'dlv_e',
      attempt: { id: 'att_2', at: at(9), retryNum: 1, latencyMs: 1, outcome: 'acked', status: 200, response: 'ok' },
      state: { at: at(9), state: 'delivered' },
    },
  ];
  let want: DeliveryRecord | undefined;
  for (const e of entries) {
    log.append(e);
    want = applyEntry(want, e);
    t.same(await log.get('dlv_e'), want, `after ${Object.keys(e).join('+')}: what applyEntry makes`);
  }
  const first = must(await log.get('dlv_e'));
  first.attempts.push(must(first.attempts[0]));
  first.state = 'failed';
  t.same(await log.get('dlv_e'), want, 'changing what a read answered changes nothing held');
  t.not(await log.get('dlv_e'), await log.get('dlv_e'), 'each read is a new object');
  log.append(call('dlv_c', at(2)));
  t.same(
    must(await log.get('dlv_c')).payload,
    { messageType: 'SLASH_COMMAND', slashCommand: '/ok', text: 'hi dlv_c', triggerId: 'trg_dlv_c' },
    "a delivered trigger's payload is held in memory (show, replay) though not written",
  );
});

t.test('onChange: each listener hears the delivery after every entry about it', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const log = open(dir);
  t.teardown(() => log.close());
  const heard: Array<[string, string, number]> = [];
  const off = log.onChange((r) => heard.push([r.id, r.state, r.attempts.length]));
  log.append({ ...begunEvent('dlv_1', at(0), { n: 1 }), state: { at: at(0), state: 'pending' } });
  log.append({
    id: 'dlv_1',
    attempt: { id: 'att_1', at: at(1), retryNum: 0, latencyMs: 1, outcome: 'acked' },
    state: { at: at(1), state: 'delivered' },
  });
  log.append({ id: 'dlv_unknown', state: { at: at(1), state: 'cancelled' } });
  off();
  log.append(call('dlv_2', at(2)));
  t.same(
    heard,
    [
      ['dlv_1', 'pending', 0],
      ['dlv_1', 'delivered', 1],
    ],
    'heard after each entry; nothing for a delivery not known, nothing once unsubscribed',
  );
});

t.test('list: newest created first, the one changed last first among equals; filters', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const log = open(dir);
  log.append(call('dlv_a', at(0)));
  log.append(call('dlv_b', at(1), false));
  log.append(call('dlv_c', at(1)));
  log.append(call('dlv_d', at(2), true, 'app_2'));
  log.append({ id: 'dlv_b', state: { at: at(3), state: 'cancelled', cancelReason: 'by its owner' } });
  const ids = async (f: Parameters<typeof log.list>[0]) => (await log.list(f)).map((r) => r.id);
  t.same(await ids({ ownerId: 'wu_1' }), ['dlv_d', 'dlv_b', 'dlv_c', 'dlv_a'], 'b changed after c: listed first');
  t.same(await ids({ ownerId: 'wu_1', appId: 'app_1', limit: 2 }), ['dlv_b', 'dlv_c']);
  t.same(await ids({ ownerId: 'wu_1', state: 'cancelled' }), ['dlv_b']);
  t.same(await ids({ ownerId: 'wu_1', kind: 'event' }), []);
  t.same(await ids({ ownerId: 'wu_2' }), []);
  await log.close();
  const again = open(dir);
  t.teardown(() => again.close());
  t.same(
    (await again.list({ ownerId: 'wu_1' })).map((r) => [r.id, r.state]),
    [
      ['dlv_d', 'delivered'],
      ['dlv_b', 'cancelled'],
      ['dlv_c', 'delivered'],
      ['dlv_a', 'delivered'],
    ],
    'the same order and states after a restart',
  );
  t.match(await again.get('dlv_b'), {
    state: 'cancelled',
    cancelReason: 'by its owner',
    payload: { text: 'hi dlv_b' },
  });
  t.match(await again.get('dlv_c'), { state: 'delivered', payload: null, response: { text: 'done' } });
});

t.test('at most MAX_INDEXED deliveries are held: the ones changed longest ago go first', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const log = open(dir);
  t.teardown(() => log.close());
  log.append({ ...begunEvent('dlv_old', AT, { n: 0 }), state: { at: AT, state: 'pending' } });
  log.append({ ...begunEvent('dlv_touched', AT, { n: 0 }), state: { at: AT, state: 'pending' } });
  for (let i = 0; i < MAX_INDEXED - 2; i++) log.append(call(`dlv_${i}`, AT));
  log.append({ id: 'dlv_touched', state: { at: AT, state: 'retrying' } });
  log.append(call('dlv_last', AT));
  t.equal(await log.get('dlv_old'), undefined, 'the delivery changed longest ago is let go');
  t.match(await log.get('dlv_touched'), { state: 'retrying' }, 'one changed lately stays');
  t.ok(await log.get('dlv_0'), 'the rest stay');
  t.equal((await log.list({ ownerId: 'wu_1', limit: MAX_INDEXED + 10 })).length, MAX_INDEXED);
  log.append({ id: 'dlv_old', state: { at: AT, state: 'cancelled' } });
  t.equal(await log.get('dlv_old'), undefined, 'an entry about a delivery let go makes nothing');
});

t.test('a shared body and an earlier appreg’s whole delivery are held as read', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const body = JSON.stringify({ tx: `shared — ${'x'.repeat(200)}` });
  const log = open(dir);
  for (const id of ['dlv_s1', 'dlv_s2']) log.append({ ...begunEvent(id, AT, { eventType: 'NEW_MESSAGE', body }) });
  await log.close();
  const file = path.join(dir, must(fs.readdirSync(dir)[0]));
  t.ok(fs.readFileSync(file, 'utf8').includes('"$body"'), 'the body was written once and referred to');
  const whole: DeliveryRecord = {
    ...must(begunEvent('dlv_w', AT, { n: 7 }).begun).head,
    updatedAt: AT,
    state: 'retrying',
    payload: { n: 7 },
    attempts: [{ id: 'att_w', at: AT, retryNum: 0, latencyMs: 1, outcome: 'timeout' }],
  };
  fs.appendFileSync(file, JSON.stringify(whole) + '\n');
  const again = open(dir);
  t.teardown(() => again.close());
  t.same(must(await again.get('dlv_s2')).payload, { eventType: 'NEW_MESSAGE', body }, 'the body read into it');
  again.append({ id: 'dlv_w', state: { at: at(1), state: 'cancelled', cancelReason: 'gone' } });
  t.match(await again.get('dlv_w'), {
    state: 'cancelled',
    cancelReason: 'gone',
    payload: { n: 7 },
    attempts: [{ id: 'att_w' }],
  });
});

t.test('held deliveries: the index alone', async (t) => {
  const held = createHeldDeliveries((line) => JSON.parse(line) as LogEntry);
  const e = call('dlv_x', AT);
  t.equal(held.add({ id: 'dlv_x', state: { at: AT, state: 'failed' } }, '{}'), undefined, 'unknown: not held');
  const line = JSON.stringify({ ...e, begun: must(e.begun) });
  t.ok(held.add(e, line));
  t.equal(held.size, 1);
  held.dropOlderThan(Date.parse(AT) + 1);
  t.equal(held.size, 0, 'changed before the cutoff: let go');
});

t.test('held texts: bytes outside the heap, slabs reused once all their texts are let go', async (t) => {
  const texts = new HeldTexts();
  const a = texts.put('plain');
  const b = texts.put('é — “quoted” \u{1F600}');
  t.equal(texts.text(a), 'plain');
  t.equal(texts.text(b), 'é — “quoted” \u{1F600}', 'non-ASCII read back as written');
  const line = 'x'.repeat(100_000);
  const live: number[] = [];
  for (let i = 0; i < 2000; i++) {
    live.push(texts.put(`${i}:${line}`));
    if (live.length > 20) texts.drop(must(live.shift()));
  }
  t.equal(texts.text(must(live.at(-1))), `1999:${line}`);
  t.equal(texts.text(must(live[0])), `1980:${line}`, 'the oldest still held is intact after slabs were reused');
  t.ok(texts.bytes <= 8 << 20, `about 200 MB written, ${texts.bytes} bytes of slabs held`);
});

t.test('held deliveries: a line too long for a slab is held as it is; let go with its delivery', async (t) => {
  const held = createHeldDeliveries((line) => JSON.parse(line) as LogEntry);
  const big = begunEvent('dlv_big', AT, { pad: 'é'.repeat(MAX_HELD_TEXT) });
  const line = JSON.stringify({ id: 'dlv_big', state: big.state });
  t.ok(held.add(big, JSON.stringify({ id: 'dlv_big', begun: must(big.begun).head, state: big.state })));
  t.ok(held.add({ id: 'dlv_big', state: { at: at(1), state: 'cancelled' } }, line));
  t.equal(held.size, 1);
  for (let i = 0; i < MAX_INDEXED; i++) {
    const e = call(`dlv_${i}`, AT);
    held.add(e, JSON.stringify({ id: e.id, state: e.state }));
  }
  t.equal(held.size, MAX_INDEXED, 'the oldest let go');
  t.equal(held.get('dlv_big'), undefined);
  t.ok(held.bytes < 4 << 20, `${held.bytes} bytes of slabs for ${MAX_INDEXED} short lines`);
});
