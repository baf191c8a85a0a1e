/**
 * A message and its events are one commit (docs/architecture.md, "The path of an event"): a daemon
 * killed with SIGKILL at any point of a burst of posts loses no event of a post it acknowledged.
 * The daemon is a child process (`appreg serve`), killed at a random number of acknowledged posts
 * while several posts are under way, and started again on the same data (the same database in the
 * store matrix's PostgreSQL pass); after the last restart every acknowledged message has reached
 * the subscribed app as NEW_MESSAGE, counted once per message id (an attempt the kill cut short is
 * made again, so the app may see one twice: what a receiver dedupes).
 * Nothing here is timed: the kills follow acknowledgements, and the end is waited for as a condition.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { clientOf, serveProcess, type ServedDaemon } from '../helpers/daemons.js';
import { onPostgres, tempDir, type TestDaemon } from '../helpers/daemon.js';
import { pgDatabaseOrSkip } from '../helpers/pg.js';
import { startReceiver } from '../helpers/receiver.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { must } from '../../src/must.js';

const ROUNDS = 4;
const POSTERS = 6;

/** A small seeded generator (mulberry32), so that a failing run can be repeated with its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

async function until(what: string, fn: () => boolean | Promise<boolean>, limitMs: number): Promise<void> {
  const end = Date.now() + limitMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`gave up waiting (${limitMs / 1000} s) for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

t.test(
  'a daemon killed at random points of a burst of posts: every acknowledged message reaches the subscribed app as NEW_MESSAGE, once per message',
  async (t) => {
    const databaseUrl = onPostgres() ? await pgDatabaseOrSkip(t) : undefined;
    if (onPostgres() && !databaseUrl) return;
    const seed = Number(process.env.APPREG_TEST_SEED) || Date.now() % 1_000_000;
    t.comment(`seed ${seed} (APPREG_TEST_SEED=${seed} repeats this run's kill points)`);
    const rand = random(seed);

    const dataDir = tempDir('appreg-crash-');
    t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const env = {
      ...(databaseUrl ? { APPREG_DATABASE_URL: databaseUrl } : {}),
      APPREG_PLATFORM_RATE_LIMITS: 'false',
      APPREG_DELIVERY_EVENT_TIMEOUT_MS: '2000',
      // a killed daemon's events are taken over once their lease runs out (PostgreSQL; the embedded
      // store's restart takes them at once)
      APPREG_DELIVERY_LEASE_MS: '3000',
      APPREG_DELIVERY_RETRY_SCHEDULE: '0.2,0.5,1,2,4',
    };
    let daemon: ServedDaemon | undefined;
    const output: string[] = [];
    t.teardown(async () => {
      const d = daemon;
      if (d && d.child.exitCode === null && d.child.signalCode === null) {
        d.child.kill('SIGKILL');
        await d.exited;
      }
    });
    const start = async () => {
      daemon = await serveProcess(dataDir, env);
      return daemon;
    };

    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const seen = new Map<string, number>();
    rx.on('/events', (r) => {
      if (r.signatureValid && r.body?.eventType === 'NEW_MESSAGE') {
        const mId = JSON.parse(r.body.body).mId as string;
        seen.set(mId, (seen.get(mId) ?? 0) + 1);
      }
      return { text: 'ok' };
    });

    let d = await start();
    const creds = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8')) as {
      authToken: string;
      workspaceId: string;
      workspaceUserId: string;
    };
    const as = (url: string) => clientOf(url, creds) as unknown as TestDaemon;
    const listener = await installPlatformApp(as(d.url), {
      name: 'listener',
      events: ['NEW_MESSAGE'],
      eventsUrl: `${rx.url}/events`,
    });
    rx.secret = listener.app.signingSecret;
    const poster = await installPlatformApp(as(d.url), { name: 'poster' });
    const headers = {
      token: must(poster.tokens.botToken),
      'x-app-token': poster.app.appKey,
      'content-type': 'application/json',
    };
    const channels = (await (await fetch(`${d.url}/v1/channels`, { headers })).json()) as Array<{
      channel: { id: string; name: string };
    }>;
    const general = must(channels.find((c) => c.channel.name === 'general')).channel.id;

    const acked = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const killAfter = 1 + Math.floor(rand() * 40);
      let ackedThisRound = 0;
      let n = 0;
      const url = d.url;
      const victim = d;
      const poster = async (who: number) => {
        for (;;) {
          let res: Response;
          try {
            res = await fetch(`${url}/v1/channels/${general}/messages`, {
              method: 'POST',
              headers,
              body: JSON.stringify({ text: `round ${round} poster ${who} #${n++}` }),
            });
          } catch {
            return; // the daemon is gone: this post was not acknowledged
          }
          if (res.status !== 200) {
            await res.body?.cancel();
            if (victim.child.exitCode !== null || victim.child.signalCode !== null) return;
            throw new Error(`a post answered ${res.status}`);
          }
          let id: string;
          try {
            id = ((await res.json()) as { id: string }).id;
          } catch {
            return; // cut off while the answer was read: not acknowledged
          }
          acked.add(id);
          if (++ackedThisRound === killAfter) victim.child.kill('SIGKILL'); // at once, with the others' posts under way
        }
      };
      await Promise.all(Array.from({ length: POSTERS }, (_, i) => poster(i)));
      await victim.exited;
      output.push(victim.out());
      t.ok(
        ackedThisRound >= killAfter,
        `round ${round + 1}: killed after ${killAfter} acknowledged posts (${ackedThisRound} acknowledged in all)`,
      );
      d = await start();
    }

    const missing = () => [...acked].filter((id) => !seen.has(id));
    try {
      await until('every acknowledged message to reach the app', () => missing().length === 0, 60_000);
    } catch (e) {
      output.push(d.out());
      t.comment(output.join('\n---\n').slice(-4000));
      throw e;
    }
    t.same(missing(), [], `all ${acked.size} acknowledged messages reached the app`);
    const twice = [...seen.values()].filter((c) => c > 1).length;
    t.comment(
      `${seen.size} distinct messages received (${seen.size - acked.size} of posts cut off before their answer); ${twice} sent twice (an attempt the kill cut short, made again)`,
    );
    t.ok(
      rx.received.every((r) => r.signatureValid),
      'every event signed with the listener’s secret',
    );
  },
);
