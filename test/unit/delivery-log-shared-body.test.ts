import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { tempDir } from '../helpers/daemon.js';
import { createLogger } from '../../src/logger.js';
import { openFileDeliveryLog } from '../../src/delivery/file-log.js';
import type { LogEntry } from '../../src/delivery/log.js';
import type { DeliveryRecord } from '../../src/model/delivery.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';
import { begunEvent } from '../helpers/log-entries.js';

const quiet = createLogger({ level: 'error', stream: { write: () => {} } });
const clock = createTestClock();
const open = (dir: string) => openFileDeliveryLog({ dir, maxBytes: 1 << 22, retentionDays: 7, clock, logger: quiet });
const AT = new Date(clock.now()).toISOString();

/** The message every app of a fan-out gets: a JSON-encoded body, with quotes and non-ASCII to escape. */
const BODY = JSON.stringify({ mId: 'msg_1', tx: `hello "world" — ${'é'.repeat(300)}`, md: { a: [1, 2] } });

/** Event delivery `id` of `body` to app `app`, begun (pending). */
function begun(id: string, app: string, body: string): LogEntry {
  const payload = {
    messageType: 'PUMBLE_EVENT',
    eventType: 'NEW_MESSAGE',
    workspaceId: 'ws_1',
    workspaceUserIds: [`wu_${app}`],
    body,
  };
  return begunEvent(id, AT, payload, {
    subject: 'NEW_MESSAGE',
    appId: app,
    appName: app,
    userId: `wu_${app}`,
    url: 'http://127.0.0.1:9/e',
  });
}

const fileOf = (dir: string) => path.join(dir, must(fs.readdirSync(dir)[0]));
const count = (hay: string, needle: string) => hay.split(needle).length - 1;

t.test('delivery log: a body shared by a fan-out is written once and read back into every delivery', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const log = open(dir);
  const entries = Array.from({ length: 100 }, (_, i) => begun(`dlv_${i}`, `app_${i}`, BODY));
  entries.push(begun('dlv_alone', 'app_x', JSON.stringify({ mId: 'other', tx: 'y'.repeat(200) })));
  entries.push(begun('dlv_short', 'app_y', '{"mId":"s"}'));
  for (const e of entries) log.append(e);
  const live = new Map<string, DeliveryRecord>();
  for (const e of entries) live.set(e.id, must(await log.get(e.id)));
  await log.close();

  const text = fs.readFileSync(fileOf(dir), 'utf8');
  const escaped = JSON.stringify(BODY).slice(1, -1);
  t.equal(count(text, escaped), 1, 'the shared body is on disk once, not once per delivery');
  t.equal(count(text, '"$body":"dlv_0"'), 100, 'each delivery of the fan-out refers to it');
  t.ok(text.includes('"dlv_alone","begun"'), 'a body carried once is kept on its line as before');

  const again = open(dir);
  t.teardown(() => again.close());
  for (const e of entries) {
    const rec = must(await again.get(e.id), e.id);
    t.same(rec, live.get(e.id), `${e.id} reads back as it was`);
    t.equal(JSON.stringify(rec.payload), must(e.begun).raw, `${e.id}: a replay sends the very bytes first sent`);
  }
});

t.test('delivery log: a log written before shared bodies still reads', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(dir, { recursive: true });
  // two lines as the earlier appreg wrote them: the whole payload on each
  const old = [0, 1].map((i) => {
    const e = must(begun(`dlv_${i}`, `app_${i}`, BODY).begun);
    return `{"id":"dlv_${i}","begun":${JSON.stringify(e.head).slice(0, -1)},"payload":${e.raw}},"state":{"at":"${AT}","state":"pending"}}\n`;
  });
  fs.writeFileSync(path.join(dir, 'log-00000001.jsonl'), old.join(''));
  const log = open(dir);
  t.teardown(() => log.close());
  for (const i of [0, 1])
    t.match(await log.get(`dlv_${i}`), {
      state: 'pending',
      payload: { body: BODY, workspaceUserIds: [`wu_app_${i}`] },
    });
});

t.test('delivery log: a torn write skips only the deliveries it tore, and the next write starts a line', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const log = open(dir);
  log.append(begun('dlv_before', 'app_b', BODY));
  await log.flush();
  const sizeBefore = fs.statSync(fileOf(dir)).size;
  for (let i = 0; i < 3; i++) log.append(begun(`dlv_${i}`, `app_${i}`, BODY));
  await log.close();
  const full = fs.readFileSync(fileOf(dir), 'utf8');

  // torn inside the shared body's line: the deliveries that refer to it cannot be read, the earlier one can
  fs.writeFileSync(fileOf(dir), full.slice(0, sizeBefore + 40));
  const torn = open(dir);
  t.ok(await torn.get('dlv_before'), 'what was written before the torn write reads');
  for (let i = 0; i < 3; i++) t.equal(await torn.get(`dlv_${i}`), undefined, `dlv_${i}: its body was torn, skipped`);
  torn.append(begun('dlv_after', 'app_a', 'z'.repeat(10)));
  await torn.close();
  const reread = open(dir);
  t.ok(await reread.get('dlv_after'), 'a write after the crash is not glued to the torn line');
  t.ok(await reread.get('dlv_before'));
  await reread.close();

  // torn inside the last delivery's line: only that one is lost
  fs.writeFileSync(fileOf(dir), full.slice(0, -20));
  const tail = open(dir);
  t.teardown(() => tail.close());
  t.match(await tail.get('dlv_0'), { payload: { body: BODY } });
  t.match(await tail.get('dlv_1'), { payload: { body: BODY } });
  t.equal(await tail.get('dlv_2'), undefined, 'the torn line only');
});
