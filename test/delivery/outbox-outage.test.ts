/**
 * PostgreSQL stopped mid-burst (this process's own cluster, stopped and started again), one daemon
 * on it: the attempts the app answered 200 while the database was down could not be recorded, and
 * are made again when their lease runs out, under the same `x-appreg-delivery-id`, marked with
 * `x-appreg-retry-num` (docs/protocol.md §5.6); nothing acknowledged is lost. Run by the store
 * matrix's PostgreSQL pass. (A daemon killed mid-burst: outbox-crash.test.ts.)
 */
import t from 'tap';
import { onPostgres } from '../helpers/daemon.js';
import { startPgCluster } from '../helpers/pg.js';
import { fileLimit } from '../helpers/file-limit.js';
import { busyMachine, POSTERS, random, setUpBurst, waitFor } from '../helpers/event-burst.js';

fileLimit(t, 145_000);

t.test(
  'PostgreSQL stopped mid-burst: the attempts the app answered while it was down come again when their lease runs out, under their delivery id, marked as a retry',
  async (t) => {
    if (!onPostgres()) return void t.plan(0, "the store matrix's PostgreSQL pass runs it");
    const cluster = await startPgCluster();
    const outage = cluster.outage;
    if (!outage) return void t.plan(0, 'APPREG_TEST_PG_URL: the database is not this process’s to stop');
    const seed = Number(process.env.APPREG_TEST_SEED) || Date.now() % 1_000_000;
    t.comment(`seed ${seed} (APPREG_TEST_SEED=${seed} repeats this run's stop point)`);
    const holdAfter = 5 + Math.floor(random(seed)() * 30);
    const { burst, settled, hold, leftover, first: d } = await setUpBurst(t, await cluster.createDatabase());

    const acked = new Set<string>();
    const idle = busyMachine(t);
    let stopped = false;
    t.teardown(() => (stopped ? outage.start() : undefined));
    // From the `holdAfter`th acknowledged post on the app holds its answers; once it holds one, the
    // database stops, and then the app answers 200 to every attempt it held: attempts whose outcome
    // cannot be written.
    const posting = burst(d.url, 'burst', acked, (n) => n === holdAfter && hold.start());
    await waitFor('an attempt in flight', () => hold.held() > 0, 60_000);
    outage.stop();
    stopped = true;
    const inFlight = hold.release();
    const answered = inFlight.length;
    const unrecorded = () =>
      d
        .out()
        .split('\n')
        .filter((l) => l.includes('"msg":"the outcome of a delivery attempt could not be recorded'));
    await waitFor(
      'the daemon to have failed to record the outcome of each attempt the app answered',
      () => inFlight.every((id) => unrecorded().some((l) => l.includes(id))),
      60_000,
    );
    const { ackedHere, refused } = await posting;
    t.ok(
      refused.length === POSTERS && refused.every((s) => s === 503),
      `while it was stopped every poster was refused with 503 (${refused.join(', ')})`,
    );
    outage.start();
    stopped = false;
    await idle();
    // the database back, the daemon makes what it could not record again once its leases run out
    await waitFor('the store to hold nothing left to deliver', async () => (await leftover()).length === 0, 90_000);
    const c = await settled(t, acked, () => d.out());
    t.ok(
      c.duplicates >= answered,
      `the database stopped after ${holdAfter} of ${ackedHere} acknowledged posts, with ${answered} attempts in flight that the app answered 200 while it was down: each came again (${c.duplicates} duplicates)`,
    );
  },
);
