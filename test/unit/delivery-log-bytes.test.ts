// The bytes the embedded delivery log writes (file-log.ts): each entry's line is JSON.stringify of the entry in the
// line's form, then a newline, whatever the text holds (escapes, non-ASCII, astral characters, lone surrogates in the
// payload's strings), in one gathering or across several, and in a gathering larger than the buffer kept for writes.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { tempDir } from '../helpers/daemon.js';
import { createLogger } from '../../src/logger.js';
import { openFileDeliveryLog } from '../../src/delivery/file-log.js';
import type { LogEntry } from '../../src/delivery/log.js';
import { createTestClock } from '../helpers/test-clock.js';
import { begunEvent } from '../helpers/log-entries.js';

const quiet = createLogger({ level: 'error', stream: { write: () => {} } });
const clock = createTestClock();
const open = (dir: string) => openFileDeliveryLog({ dir, maxBytes: 1 << 30, retentionDays: 7, clock, logger: quiet });
const AT = new Date(clock.now()).toISOString();

const PIECES = ['a', '"', '\\', '\n', '\t', '\u0001', 'é', '—', '中', '\u{1F600}', '\ud800', '\udfff', '<', ' '];

/** Text of `len` pieces chosen by a deterministic generator. */
function textOf(seed: number, len: number): string {
  let x = seed;
  let s = '';
  for (let i = 0; i < len; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    s += PIECES[x % PIECES.length];
  }
  return s;
}

/** A slash command begun, attempted and delivered at once (its written line keeps no payload), or an event begun. */
function entryOf(i: number, textLength: number): LogEntry {
  const text = textOf(i + 1, textLength);
  if (i % 2) return begunEvent(`dlv_e${i}`, AT, { messageType: 'PUMBLE_EVENT', eventType: 'X', body: { text } });
  const e = begunEvent(
    `dlv_s${i}`,
    AT,
    { messageType: 'SLASH_COMMAND', slashCommand: '/x', text },
    {
      kind: 'slash-command',
      subject: '/x',
      appName: text.slice(0, 6),
      url: `http://127.0.0.1:9/${i}`,
    },
  );
  e.attempt = {
    id: `att_${i}`,
    at: AT,
    retryNum: 0,
    latencyMs: 1.5,
    outcome: 'acked',
    status: 200,
    excerpt: text.slice(0, 30),
    answerHeaders: [['x-echo', textOf(i + 7, 8)]],
    response: { message: text.slice(0, 12) },
  };
  e.state = { at: AT, state: 'delivered', ephemeralMessage: text.slice(3, 9) };
  return e;
}

/** The line as the log's format has it, made the plain way. */
function expectedLine(e: LogEntry): string {
  const b = e.begun;
  const delivered = b?.head.kind !== 'event' && e.state?.state === 'delivered';
  const begun = b && { ...b.head, payload: delivered ? null : b.payload };
  return JSON.stringify({ id: e.id, begun, attempt: e.attempt, state: e.state });
}

t.test('the written bytes are each line as JSON.stringify makes it, and a newline', async (t) => {
  const dir = tempDir('appreg-log-bytes-');
  const log = open(dir);
  const entries: LogEntry[] = [];
  // several gatherings (a flush between), then one larger than the 4 MiB kept buffer (3 bytes a character counted)
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 40; i++) {
      const e = entryOf(round * 100 + i, 20 + ((i * 37) % 300));
      entries.push(e);
      log.append(e);
    }
    await log.flush();
  }
  for (let i = 0; i < 6; i++) {
    const e = entryOf(1000 + i, 300_000);
    entries.push(e);
    log.append(e);
  }
  await log.close();
  const files = fs.readdirSync(dir);
  t.equal(files.length, 1);
  const written = fs.readFileSync(path.join(dir, files[0] ?? ''));
  const expected = Buffer.from(entries.map((e) => `${expectedLine(e)}\n`).join(''), 'utf8');
  t.equal(written.length, expected.length, 'as many bytes');
  t.ok(written.equals(expected), 'the same bytes');
});
