/**
 * The Store on PostgreSQL, shared by any number of daemons: every read a query (nothing cached: another
 * daemon's commit is seen once it answered), commits in batches of appreg_commit_batch (commit-sql.ts).
 * Records are rows of appreg_records; find uses the partial expression index of its (table, field).
 */
import { must } from '../../must.js';
import pg from 'pg';
import { systemClock, type Clock, type Timer } from '../../clock.js';
import { assertIndexed } from '../indexes.js';
import { validateChanges } from '../tables.js';
import { transaction } from '../transaction.js';
import type { Tables as DaemonTables } from '../../model/tables.js';
import {
  checkHit,
  checkPayload,
  checkRecordKeys,
  deepFreeze,
  jsonHoldsUnstorable,
  StoreUnavailable,
  StoreValueRefused,
  typed,
  type AnyTables,
  type Change,
  type ClaimRequest,
  type Expectation,
  type PageQuery,
  type EngineReads,
  type Store,
  type StoreEngine,
  type StoreHealth,
  type StoreLogger,
  type StoreReads,
  type TableMap,
} from '../types.js';
import { isConnectionError } from './errors.js';
import { batchedCommits, batchedHits, batchedReads, type CommitArgs } from './batched-ops.js';
import { Notifier, pgChannel } from './listener.js';
import { assertSafeName, fieldKey, migrateWith, pageKey } from './migrations.js';
import { redactUrl, withJitOff } from './url.js';
import { messageOf } from '../../unknown-values.js';

export interface PostgresStoreOptions {
  /** postgres://user:password@host:port/db */
  url: string;
  logger: StoreLogger;
  /** This daemon's id: the connections' application_name (pg_stat_activity shows who is who). */
  instanceId: string;
  /** Connections in the pool (default 10). */
  poolSize?: number;
  /** While the database is unreachable, probe it this often (ms; default 1000). */
  retryMs?: number;
  /** After the LISTEN connection drops, the first reconnect waits this long (ms; default 250), doubling up to 5 s. */
  listenRetryMs?: number;
  /** The probe's and the reconnect's timers: the daemon's clock; default the system's. */
  clock?: Clock;
  /**
   * Checks of what the database holds, run before this store writes anything to it (its
   * migrations included): what it throws refuses the open, the database unchanged.
   */
  beforeWrite?: (reads: StoreReads) => Promise<void>;
}

/** A key no record has (no table is named ''): what a key holding a NUL is read as. */
const NO_RECORD = { table: '', id: '' } as const;

/** Old rate-limit windows are deleted after about this many hits. */
const HIT_SWEEP_EVERY = 1000;

type Row = { data: object; v: string };
/** Records a scan reads per query. */
const SCAN_PAGE = 1000;

export async function openPostgresStore<TM extends TableMap = DaemonTables>(
  opts: PostgresStoreOptions,
): Promise<Store<TM>> {
  const applicationName = `appreg-${opts.instanceId}`.slice(0, 63);
  const config: pg.ClientConfig = {
    connectionString: withJitOff(opts.url),
    application_name: applicationName,
    keepAlive: true,
  };
  // A database that does not answer fails a request after 10 s instead of holding it forever;
  // keepalive notices a peer that vanished without closing the connection.
  const pool = new pg.Pool({ ...config, max: opts.poolSize ?? 10, connectionTimeoutMillis: 10_000, keepAlive: true });
  const where = redactUrl(opts.url);
  /** health()'s reason while PostgreSQL is unreachable (null: it answers). */
  let fault: string | null = null;
  let closing = false;
  const clock = opts.clock ?? systemClock;
  let retryTimer: Timer | null = null;
  const retryMs = opts.retryMs ?? 1000;

  // While the database is unreachable, a probe now and then notices when it is back, so health()
  // recovers without waiting for a request (the embedded store retries its journal the same way).
  const armProbe = () => {
    if (retryTimer || closing) return;
    retryTimer = clock.setTimeout(() => {
      retryTimer = null;
      if (!closing && fault) return q('SELECT 1').catch(() => {});
      return undefined;
    }, retryMs);
  };
  const noteFault = (err: unknown): boolean => {
    if (!isConnectionError(err)) return false;
    if (!fault)
      opts.logger.warn(
        'store: PostgreSQL is unreachable; every call that needs it is refused (503) until it answers again',
        { database: where, error: messageOf(err) },
      );
    fault = reason(err);
    armProbe();
    return true;
  };
  const reason = (err: unknown) => `the store cannot reach PostgreSQL: ${messageOf(err)}`;
  // An idle pooled connection that drops (server restart, pg_terminate_backend) is reported here, not to a query.
  pool.on('error', noteFault);

  /**
   * Every statement is a named (prepared) one: PostgreSQL plans it once per connection instead of
   * on every call. Planning a lookup on the records table, with a partial index per indexed field to
   * weigh, costs about ten times its execution (measured: 0.15-0.18 ms against 0.017 ms); the
   * statements' texts are few, so the names stay few. A statement whose best plan depends on the
   * table (all, count, claim: an index range for a table of 3 rows, a scan for one of 80,000)
   * spells the table in, as a find spells its table and field, so each table's gets its own plan:
   * with the table a parameter, one generic plan scanned the whole records table (2.4 ms) for the
   * delivery worker's poll of an empty outbox, and the claim was planned afresh at every poll.
   */
  const names = new Map<string, string>();
  const nameOf = (text: string) => {
    let name = names.get(text);
    if (!name) names.set(text, (name = `appreg_q${names.size}`));
    return name;
  };

  async function q<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    if (closing) throw new Error('store is closed');
    try {
      const res = await pool.query<R>({ name: nameOf(text), text, values });
      if (fault)
        (opts.logger.info ?? opts.logger.warn).call(opts.logger, 'store: PostgreSQL answers again', {
          database: where,
        });
      fault = null;
      return res;
    } catch (err) {
      // the connection, not the statement: the caller is told the store is unavailable, with health()'s reason
      if (noteFault(err)) throw new StoreUnavailable(reason(err), { cause: err });
      throw err;
    }
  }

  // The caller's checks, then the schema: a daemon never runs against a database it has not
  // brought up to date, and one that is refused changes nothing.
  try {
    const client = await pool.connect();
    try {
      if (opts.beforeWrite) await opts.beforeWrite(typed(readsBeforeMigrating(client)));
      await migrateWith(client);
    } finally {
      client.release();
    }
  } catch (err) {
    // The caller names the database (redacted); pg's messages never hold the password.
    await pool.end().catch(() => {});
    throw err;
  }

  const notifier = new Notifier({
    client: () => new pg.Client(config),
    logger: opts.logger,
    retryMs: opts.listenRetryMs,
    clock,
  });
  try {
    await notifier.start();
  } catch (err) {
    await notifier.close();
    await pool.end().catch(() => {});
    throw err;
  }
  let hitsSinceSweep = 0;
  // The hot calls go in batches (batched-ops.ts), one batch of each kind at the database at a time:
  // what arrives meanwhile goes together next. Measured on 2 cores, three at a time instead of one
  // cost 5-7 % more CPU per token exchange (smaller batches) for no more exchanges per second.
  const inFlight = 1;
  // The row version (xmin) of every record read, so that a commit expecting it sends the version,
  // not the record: smaller, and compared in the database without parsing and comparing jsonb.
  const versions = new WeakMap<object, string>();
  const track = (data: object, v: string) => {
    versions.set(data, v);
    return data;
  };
  const reads = batchedReads(q, inFlight, track);
  const commits = batchedCommits(q, inFlight);
  const hits = batchedHits(q, inFlight);

  const store: StoreEngine = {
    kind: 'postgres',
    transaction,

    async get(table: string, id: string) {
      if (id.includes('\u0000')) return undefined; // no record has one (and a text parameter cannot carry it)
      return (await reads.submit([{ table, id }]))[0];
    },

    async getMany(keys, opts) {
      checkRecordKeys(keys);
      if (!keys.length) return [];
      // a key with a NUL finds nothing: it is read as a key no record has (never sent, it would fail the whole batch)
      const found = await reads.submit(keys.map((k) => ('id' in k && k.id.includes('\u0000') ? NO_RECORD : k)));
      // fresh objects, frozen as the embedded store's shared ones are: a caller that modifies one fails here too
      if (opts?.shared) for (const r of found) deepFreeze(r);
      return found;
    },

    async find(table: string, field: string, value: string) {
      if (value.includes('\u0000')) return [];
      const r = await q<Row>(`SELECT data, xmin::text AS v FROM appreg_records WHERE ${indexed(table, field)}`, [
        value,
      ]);
      return r.rows.map((x) => track(x.data, x.v));
    },

    async countWhere(table, field, value) {
      if (value.includes('\u0000')) return 0;
      const r = await q<{ n: number }>(
        `SELECT count(*)::integer AS n FROM appreg_records WHERE ${indexed(table, field)}`,
        [value],
      );
      return r.rows[0]?.n ?? 0;
    },

    async findPage(table: string, field: string, value: string, page: PageQuery) {
      if (!Number.isInteger(page.limit) || page.limit < 1)
        throw new TypeError('store.findPage: limit must be a whole number of 1 or more');
      if (value.includes('\u0000')) return [];
      // A record whose orderBy is not a number has no key (NULL) and is left out, as on the embedded store;
      // ids compare in "C" collation (bytes), JavaScript's order for them.
      // spelled as the page index of (table, field, orderBy) is, when PAGE_ORDERS lists one
      const key = pageKey(page.orderBy);
      const dir = page.desc ? 'DESC' : 'ASC';
      const values: unknown[] = [value, page.limit];
      let beyond = '';
      if (page.after) {
        values.push(page.after.value, page.after.id);
        beyond = ` AND (${key}, id COLLATE "C") ${page.desc ? '<' : '>'} ($3::float8, $4::text COLLATE "C")`;
      }
      const r = await q<Row>(
        `SELECT data, xmin::text AS v FROM appreg_records WHERE ${indexed(table, field)} AND ${key} IS NOT NULL${beyond} ORDER BY ${key} ${dir}, id COLLATE "C" ${dir} LIMIT $2`,
        values,
      );
      return r.rows.map((x) => track(x.data, x.v));
    },

    async all(table: string) {
      assertSafeName(table);
      const r = await q<Row>(`SELECT data, xmin::text AS v FROM appreg_records WHERE tbl = '${table}'`);
      return r.rows.map((x) => track(x.data, x.v));
    },

    async scan(table: string, visit: (record: object) => boolean | void) {
      assertSafeName(table);
      // pages in id order along the primary key (tbl, id COLLATE "C"): each page is one indexed range read
      for (let after = ''; ;) {
        const r = await q<Row & { id: string }>(
          `SELECT id, data, xmin::text AS v FROM appreg_records WHERE tbl = '${table}' AND id > $1 ORDER BY id LIMIT ${SCAN_PAGE}`,
          [after],
        );
        for (const x of r.rows) if (visit(track(x.data, x.v)) === true) return;
        if (r.rows.length < SCAN_PAGE) return;
        after = must(r.rows.at(-1)).id;
      }
    },

    async count(table) {
      assertSafeName(table);
      const r = await q<{ n: number }>(`SELECT count(*)::integer AS n FROM appreg_records WHERE tbl = '${table}'`);
      return r.rows[0]?.n ?? 0;
    },

    async commit(changes: readonly Change<AnyTables>[], expect: readonly Expectation<AnyTables>[] = []) {
      validateChanges(changes);
      if (!changes.length && !expect.length) return;
      // Stringified here: a value JSON cannot hold fails the commit before anything is sent, as does
      // a NUL or an unpaired surrogate (jsonb cannot hold one; sent in a batch it would fail the
      // others' commits too).
      const args = commitArgs(changes, expect, versions);
      if (jsonHoldsUnstorable(args.changes) || jsonHoldsUnstorable(args.expect)) throw new StoreValueRefused();
      await commits.submit(args);
    },

    async claim(req: ClaimRequest) {
      assertSafeName(req.table);
      assertSafeName(req.dueField);
      const due = `CASE WHEN jsonb_typeof(data->'${req.dueField}') = 'number' THEN (data->>'${req.dueField}')::float8 END`;
      const leaseUntilOf = (d: string) =>
        `CASE WHEN jsonb_typeof(${d}->'leaseUntil') = 'number' THEN (${d}->>'leaseUntil')::float8 END`;
      const leaseUntil = leaseUntilOf('data');
      // The table is spelled in, as a find's is: each table's claim is then one prepared statement
      // whose plan is kept. With the table a parameter, PostgreSQL planned it afresh at every poll
      // (0.4 ms, about nine polls a second per daemon: most of an idle daemon's database CPU).
      // SKIP LOCKED: rows another daemon is claiming right now are left to it, never waited for.
      // a renewal of the claimer's own live lease keeps leaseTakenFrom; any other lease begins here, taking
      // over the one the record had, if any (store/types.ts ClaimRequest)
      const lease = `jsonb_build_object('leaseOwner', $2::text, 'leaseUntil', $3::numeric)`;
      const r = await q<Row>(
        `UPDATE appreg_records r SET data = CASE
           WHEN r.data->>'leaseOwner' = $2 AND ${leaseUntilOf('r.data')} > $1::float8 THEN r.data || ${lease}
           WHEN jsonb_typeof(r.data->'leaseOwner') = 'string'
             THEN r.data || ${lease} || jsonb_build_object('leaseTakenFrom', r.data->'leaseOwner')
           ELSE (r.data - 'leaseTakenFrom') || ${lease} END
         WHERE (r.tbl, r.id) IN (
           SELECT tbl, id FROM appreg_records
           WHERE tbl = '${req.table}' AND ${due} <= $1::float8
             AND (${leaseUntil} IS NULL OR ${leaseUntil} <= $1::float8 OR data->>'leaseOwner' = $2)
           ORDER BY ${due}
           LIMIT $4
           FOR UPDATE SKIP LOCKED)
         RETURNING r.data, r.xmin::text AS v`,
        [req.now, req.owner, String(req.leaseUntil), req.limit],
      );
      return r.rows.map((x) => track(x.data, x.v));
    },

    async hit(key, windowMs, now, n = 1) {
      checkHit(windowMs, n);
      // One row per key and window length: a window starts at the first hit after the last one ended.
      // a key is opaque: a NUL (from a caller's input) is counted as U+FFFD, which text can hold
      const w = await hits.submit({
        key: key.includes('\u0000') ? key.replace(/\u0000/g, '\ufffd') : key,
        windowMs,
        now,
        n,
      });
      if (++hitsSinceSweep >= HIT_SWEEP_EVERY) {
        hitsSinceSweep = 0;
        q('DELETE FROM appreg_hit_windows WHERE window_end < $1', [now]).catch(() => {});
      }
      return w;
    },

    async publish(channel, payload) {
      const name = pgChannel(channel);
      checkPayload(payload);
      // Our own listeners hear it only once their LISTEN is in place.
      await notifier.settled();
      await q('SELECT pg_notify($1, $2)', [name, payload]);
    },

    subscribe: (channel, fn, onGap) => notifier.subscribe(channel, fn, onGap),
    subscribed: () => notifier.settled(),

    health(): StoreHealth {
      return fault !== null ? { ok: false, reason: fault } : { ok: true };
    },

    async close() {
      if (closing) return;
      closing = true;
      clock.clear(retryTimer);
      await notifier.close();
      await pool.end();
    },
  };
  return typed<TM>(store);
}

/**
 * Reads on a database that may not be migrated yet (or not made at all): plain statements on
 * appreg_records, whose (tbl, id, data) every schema version has; no table yet reads as empty.
 */
function readsBeforeMigrating(client: pg.PoolClient): EngineReads {
  let exists: Promise<boolean> | undefined;
  const made = () =>
    (exists ??= client
      .query<{ t: string | null }>(`SELECT to_regclass('appreg_records')::text AS t`)
      .then((r) => r.rows[0]?.t != null));
  return {
    async get(table: string, id: string) {
      if (!(await made())) return undefined;
      return (
        await client.query<{ data: object }>('SELECT data FROM appreg_records WHERE tbl = $1 AND id = $2', [table, id])
      ).rows[0]?.data;
    },
    async all(table: string) {
      if (!(await made())) return [];
      return (await client.query<{ data: object }>('SELECT data FROM appreg_records WHERE tbl = $1', [table])).rows.map(
        (r) => r.data,
      );
    },
    async count(table: string) {
      if (!(await made())) return 0;
      return (
        (await client.query<{ n: number }>('SELECT count(*)::integer AS n FROM appreg_records WHERE tbl = $1', [table]))
          .rows[0]?.n ?? 0
      );
    },
  };
}

/**
 * The condition of a find on `field` = $1, spelled as its index is (literal table and field) so the
 * planner always picks it; a record whose field is neither a string nor a number is not indexed
 * under it (indexKey).
 */
function indexed(table: string, field: string): string {
  assertIndexed(table, field);
  assertSafeName(table);
  assertSafeName(field);
  return `tbl = '${table}' AND ${fieldKey(field)} = $1 AND jsonb_typeof(data->'${field}') IN ('string', 'number')`;
}

/**
 * A commit's two jsonb arguments (for appreg_commit_batch, or appreg_commit when a batch fails and
 * its commits go one by one) and the records they name. Changes: the last one per record (what applying
 * them in order leaves), sorted, as are expectations. An expectation on a record this store read
 * names the row version it read (commit-sql.ts); one on a record the caller built carries it.
 */
function commitArgs(
  changes: readonly Change<AnyTables>[],
  expect: readonly Expectation<AnyTables>[],
  versions: WeakMap<object, string>,
): CommitArgs {
  const key = (x: { table: string; id: string }) => `${x.table}\u0000${x.id}`;
  const byKey = <T extends { table: string; id: string }>(xs: readonly T[]) =>
    [...new Map(xs.map((x) => [key(x), x])).values()].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const ex = byKey(expect).map((e) => {
    if (e.value === undefined) return { table: e.table, id: e.id };
    const v = versions.get(e.value);
    return v === undefined ? { table: e.table, id: e.id, value: e.value } : { table: e.table, id: e.id, v };
  });
  const ch = byKey(changes).map((c) => ({ table: c.table, id: c.id, value: c.value }));
  return { expect: JSON.stringify(ex), changes: JSON.stringify(ch), expectKeys: ex.map(key), writeKeys: ch.map(key) };
}
