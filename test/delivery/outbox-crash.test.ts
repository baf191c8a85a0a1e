/**
 * A message and its events are one commit (docs/architecture.md, "The path of an event"): a daemon
 * killed with SIGKILL at any point of a burst of posts loses no event of a post it acknowledged,
 * and an event comes again only as a marked retry of the same delivery: the same
 * `x-appreg-delivery-id`, with `x-appreg-retry-num` set (docs/protocol.md §5.6).
 *
 * The daemon is a child process (`appreg serve`), killed at a random number of acknowledged posts
 * while several posts are under way, and started again on the same data (the same database in the
 * store matrix's PostgreSQL pass). After the last restart every acknowledged message has reached the
 * subscribed app as NEW_MESSAGE, each under one delivery id, and of the times one came again none
 * lacks `x-appreg-retry-num`; what the store had left to deliver at that restart has been sent. The
 * counts are printed (test/helpers/event-burst.ts); APPREG_TEST_CRASH_LOAD=n adds n CPU-bound
 * processes while the posts go. PostgreSQL stopped mid-burst: outbox-outage.test.ts.
 * Nothing here is timed: the kills follow acknowledgements, and the end is waited for as a condition.
 */
import t from 'tap';
import { onPostgres } from '../helpers/daemon.js';
import { pgDatabaseOrSkip } from '../helpers/pg.js';
import { fileLimit } from '../helpers/file-limit.js';
import { busyMachine, random, setUpBurst } from '../helpers/event-burst.js';

const ROUNDS = 3;

// a loaded machine makes the bursts and the redeliveries slow: each wait has its own limit, and the
// file may take longer than tap's default (test/run.mjs's limit follows the load)
fileLimit(t, 145_000);

t.test(
  'a daemon killed at random points of a burst of posts: every acknowledged message reaches the subscribed app as NEW_MESSAGE, under one delivery id, and again only marked as a retry',
  async (t) => {
    const databaseUrl = onPostgres() ? await pgDatabaseOrSkip(t) : undefined;
    if (onPostgres() && !databaseUrl) return;
    const seed = Number(process.env.APPREG_TEST_SEED) || Date.now() % 1_000_000;
    t.comment(`seed ${seed} (APPREG_TEST_SEED=${seed} repeats this run's kill points)`);
    const rand = random(seed);
    const { start, burst, settled, leftover, received, first } = await setUpBurst(t, databaseUrl);
    const output: string[] = [];

    let d = first;
    const acked = new Set<string>();
    const idle = busyMachine(t);
    let due = { ids: [] as string[], since: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const killAfter = 1 + Math.floor(rand() * 40);
      const victim = d;
      const { ackedHere: ackedThisRound, refused } = await burst(victim.url, `round ${round}`, acked, (n) => {
        if (n === killAfter) victim.child.kill('SIGKILL'); // at once, with the others' posts under way
      });
      t.same(refused, [], `round ${round + 1}: no post refused before the kill`);
      victim.child.kill('SIGKILL'); // (already, unless every poster was refused first)
      await victim.exited;
      output.push(victim.out());
      if (round === ROUNDS - 1) due = { ids: await leftover(), since: received() };
      t.ok(
        ackedThisRound >= killAfter,
        `round ${round + 1}: killed after ${killAfter} acknowledged posts (${ackedThisRound} acknowledged in all)`,
      );
      d = await start();
    }
    await idle();
    await settled(t, acked, () => [...output, d.out()].join('\n---\n'), due);
    t.comment(`${due.ids.length} deliveries left to make at the last restart`);
  },
);
