/**
 * Bursts of posts to a subscribed channel against an `appreg serve` child process, and what the app
 * got (test/delivery/outbox-crash.test.ts, outbox-outage.test.ts): a receiver records each
 * NEW_MESSAGE with its delivery id and retry header; `countsOf` counts the messages acknowledged,
 * received, received again (duplicates), again without `x-appreg-retry-num`, and again under a new
 * delivery id. A busy machine is CPU-bound child processes (APPREG_TEST_CRASH_LOAD of them, none by
 * default: the suite beside it keeps the machine busy).
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import type t from 'tap';
import { clientOf, serveProcess, type ServedDaemon } from './daemons.js';
import { tempDir, type TestDaemon } from './daemon.js';
import { sqlAt } from './pg.js';
import { startReceiver } from './receiver.js';
import { installPlatformApp } from './platform-client.js';
import { must } from '../../src/must.js';
import { openEmbeddedStore } from '../../src/store/embedded-store.js';
import { deliveryIdOf } from '../../src/delivery/outbox-drain.js';
import { EVENTS_OUTBOX } from '../../src/model/events.js';
import { PENDING_TABLE } from '../../src/delivery/pending.js';

export type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

/** Posters at once in a burst. */
export const POSTERS = 6;

/** A small seeded generator (mulberry32), so that a failing run can be repeated with its seed. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

export async function waitFor(what: string, fn: () => boolean | Promise<boolean>, limitMs: number): Promise<void> {
  const end = Date.now() + limitMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`gave up waiting (${limitMs / 1000} s) for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A busy machine: `n` processes spinning on the CPU until the answer is called (and at teardown). */
export function busyMachine(t: TapTest, n = Number(process.env.APPREG_TEST_CRASH_LOAD ?? 0)): () => Promise<void> {
  const spinners = Array.from({ length: n }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  const exits = spinners.map((c) => new Promise<void>((r) => c.once('exit', () => r())));
  const stop = async () => {
    for (const c of spinners) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all(exits);
  };
  t.teardown(stop);
  return stop;
}

/** One NEW_MESSAGE as the app got it. */
interface Reception {
  mId: string;
  deliveryId: string;
  /** x-appreg-retry-num; undefined when absent (a first attempt). */
  retryNum: string | undefined;
}

/**
 * What the app got, against what was acknowledged: the messages missing, those received, the times
 * one came again (duplicates), those of them without the retry header, and the new delivery ids an
 * event came under after its first.
 */
function countsOf(acked: ReadonlySet<string>, got: readonly Reception[]) {
  const byMessage = new Map<string, Reception[]>();
  for (const r of got) byMessage.set(r.mId, [...(byMessage.get(r.mId) ?? []), r]);
  let duplicates = 0;
  let unmarked = 0;
  let newIds = 0;
  for (const rs of byMessage.values()) {
    duplicates += rs.length - 1;
    unmarked += Math.max(0, rs.filter((r) => r.retryNum === undefined).length - 1);
    newIds += new Set(rs.map((r) => r.deliveryId)).size - 1;
  }
  return {
    acked: acked.size,
    missing: [...acked].filter((id) => !byMessage.has(id)),
    received: byMessage.size,
    duplicates,
    unmarked,
    newIds,
  };
}

/**
 * A daemon (started by `start`, again after each kill), a subscribed app played by a receiver that
 * records each NEW_MESSAGE, and a poster app's headers for #general.
 */
export async function setUpBurst(t: TapTest, databaseUrl: string | undefined) {
  const dataDir = tempDir('appreg-crash-');
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const env = {
    ...(databaseUrl ? { APPREG_DATABASE_URL: databaseUrl } : {}),
    APPREG_PLATFORM_RATE_LIMITS: 'false',
    APPREG_DELIVERY_EVENT_TIMEOUT_MS: '2000',
    // a killed daemon's events are taken over once their lease runs out (PostgreSQL; the embedded
    // store's restart takes them at once)
    APPREG_DELIVERY_LEASE_MS: '3000',
    // long enough for a busy machine's slow answers: no event runs out of schedule
    APPREG_DELIVERY_RETRY_SCHEDULE: '0.2,0.5,1,2,4,8,16',
  };
  let daemon: ServedDaemon | undefined;
  t.teardown(async () => {
    const d = daemon;
    if (d && d.child.exitCode === null && d.child.signalCode === null) {
      d.child.kill('SIGKILL');
      await d.exited;
    }
  });
  const start = async () => (daemon = await serveProcess(dataDir, env));

  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const got: Reception[] = [];
  /** While set, the app holds its answers (each waits for its call here): attempts in flight on cue. */
  let holding: Array<{ deliveryId: string; answer: () => void }> | undefined;
  rx.on('/events', (r) => {
    if (r.signatureValid && r.body?.eventType === 'NEW_MESSAGE') {
      const retry = r.headers['x-appreg-retry-num'];
      got.push({
        mId: JSON.parse(r.body.body).mId as string,
        deliveryId: String(r.headers['x-appreg-delivery-id']),
        retryNum: typeof retry === 'string' ? retry : undefined,
      });
    }
    const ok = { text: 'ok' };
    const deliveryId = String(r.headers['x-appreg-delivery-id']);
    return holding
      ? new Promise<typeof ok>((resolve) => must(holding).push({ deliveryId, answer: () => resolve(ok) }))
      : ok;
  });
  const hold = {
    start: () => void (holding ??= []),
    /** How many answers are held now. */
    held: () => holding?.length ?? 0,
    /** Answer every held request (200 ok) and stop holding; their delivery ids. */
    release(): string[] {
      const all = holding ?? [];
      holding = undefined;
      for (const h of all) h.answer();
      return all.map((h) => h.deliveryId);
    },
  };

  const d = await start();
  const creds = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8')) as {
    authToken: string;
    workspaceId: string;
    workspaceUserId: string;
  };
  const as = clientOf(d.url, creds) as unknown as TestDaemon;
  const listener = await installPlatformApp(as, {
    name: 'listener',
    events: ['NEW_MESSAGE'],
    eventsUrl: `${rx.url}/events`,
  });
  rx.secret = listener.app.signingSecret;
  const poster = await installPlatformApp(as, { name: 'poster' });
  const headers = {
    token: must(poster.tokens.botToken),
    'x-app-token': poster.app.appKey,
    'content-type': 'application/json',
  };
  const channels = (await (await fetch(`${d.url}/v1/channels`, { headers })).json()) as Array<{
    channel: { id: string; name: string };
  }>;
  const general = must(channels.find((c) => c.channel.name === 'general')).channel.id;

  /**
   * Post to #general from `POSTERS` posters at once until each is refused or cut off; each acknowledged
   * id goes to `acked`, and `onAck(n)` is told the number acknowledged so far in this burst. Resolves
   * to that number and the statuses of the refusals.
   */
  async function burst(
    url: string,
    label: string,
    acked: Set<string>,
    onAck: (n: number) => void,
  ): Promise<{ ackedHere: number; refused: number[] }> {
    let n = 0;
    let ackedHere = 0;
    const refused: number[] = [];
    const one = async (who: number) => {
      for (;;) {
        let res: Response;
        try {
          res = await fetch(`${url}/v1/channels/${general}/messages`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ text: `${label} poster ${who} #${n++}` }),
          });
        } catch {
          return; // the daemon is gone: this post was not acknowledged
        }
        if (res.status !== 200) {
          refused.push(res.status);
          await res.body?.cancel();
          return; // refused (the store away): not acknowledged
        }
        let id: string;
        try {
          id = ((await res.json()) as { id: string }).id;
        } catch {
          return; // cut off while the answer was read: not acknowledged
        }
        acked.add(id);
        onAck(++ackedHere);
      }
    };
    await Promise.all(Array.from({ length: POSTERS }, (_, i) => one(i)));
    return { ackedHere, refused };
  }

  /** Wait for every acknowledged message to reach the app, then check how: once each, or again only marked. */
  /**
   * The deliveries the store still has to make (read while no daemon runs on the embedded store): its
   * pending events, and those of the NEW_MESSAGE records left in the outbox (their ids are known).
   */
  async function leftover(): Promise<string[]> {
    if (databaseUrl) {
      const rows = await sqlAt<{ tbl: string; id: string; eventType: string | null }>(
        databaseUrl,
        `SELECT tbl, id, data->>'eventType' AS "eventType" FROM appreg_records WHERE tbl IN ($1, $2)`,
        [PENDING_TABLE, EVENTS_OUTBOX],
      );
      return rows
        .filter((r) => r.tbl === PENDING_TABLE || r.eventType === 'NEW_MESSAGE')
        .map((r) => (r.tbl === PENDING_TABLE ? r.id : deliveryIdOf(r.id, listener.app.id)));
    }
    const store = await openEmbeddedStore({ dir: dataDir, compactIdleMs: 0 });
    try {
      const pending = await store.all(PENDING_TABLE);
      const outbox = await store.all(EVENTS_OUTBOX);
      return [
        ...pending.map((p) => p.id),
        ...outbox.filter((e) => e.eventType === 'NEW_MESSAGE').map((e) => deliveryIdOf(e.id, listener.app.id)),
      ];
    } finally {
      await store.close();
    }
  }

  /**
   * Wait for every acknowledged message to reach the app, and each delivery in `due` (what the store
   * had left to do when the daemon started for the last time) to be sent since then; then check how
   * they came: once each, or again only marked.
   */
  async function settled(
    t: TapTest,
    acked: Set<string>,
    output: () => string,
    due: { ids: readonly string[]; since: number } = { ids: [], since: 0 },
  ): Promise<ReturnType<typeof countsOf>> {
    const sentSince = () => new Set(got.slice(due.since).map((r) => r.deliveryId));
    try {
      await waitFor(
        'every acknowledged message to reach the app',
        () => countsOf(acked, got).missing.length === 0,
        90_000,
      );
      await waitFor(
        'what the store had left to deliver to be sent',
        () => {
          const sent = sentSince();
          return due.ids.every((id) => sent.has(id));
        },
        90_000,
      );
    } catch (e) {
      t.comment(output().slice(-4000));
      throw e;
    }
    const c = countsOf(acked, got);
    t.same(c.missing, [], `all ${c.acked} acknowledged messages reached the app`);
    t.equal(c.newIds, 0, 'no event came again under a new delivery id');
    t.equal(c.unmarked, 0, 'every event that came again carried x-appreg-retry-num');
    t.comment(
      `acknowledged posts ${c.acked}; events received ${c.received} (${c.received - c.acked} of posts cut off before their answer), ${got.length} sendings; duplicates ${c.duplicates} (${c.unmarked} unmarked); new delivery ids for an old event ${c.newIds}`,
    );
    t.ok(
      rx.received.every((r) => r.signatureValid),
      'every event signed with the listener’s secret',
    );
    return c;
  }

  return { start, burst, settled, hold, leftover, received: () => got.length, first: d };
}
