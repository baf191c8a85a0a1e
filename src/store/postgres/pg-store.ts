/**
 * The Store on PostgreSQL, shared by any number of daemons: every read a query (nothing cached: another
 * daemon's commit is seen once it answered), every commit one call of appreg_commit (migrations.ts).
 * Records are rows of appreg_records; find uses the partial expression index of its (table, field).
 */
import pg from 'pg';
import { assertIndexed } from '../indexes.js';
import { validateChanges } from '../tables.js';
import { checkPayload, checkRecordKeys, StoreConflict, type Change, type ClaimRequest, type Expectation, type PageQuery, type Store, type StoreHealth, type StoreLogger } from '../types.js';
import { DEADLOCK_SQLSTATE, conflictOf, isConnectionError } from './errors.js';
import { Notifier, pgChannel } from './listener.js';
import { assertSafeName, migrateWith } from './migrations.js';
import { redactUrl } from './url.js';

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
}

/** A deadlock aborts one commit with nothing written: it is run again, a few times. */
const DEADLOCK_RETRIES = 5;
/** Old rate-limit windows are deleted after about this many hits. */
const HIT_SWEEP_EVERY = 1000;

type Row = { data: object };

export async function openPostgresStore(opts: PostgresStoreOptions): Promise<Store> {
  const applicationName = `appreg-${opts.instanceId}`.slice(0, 63);
  const config: pg.ClientConfig = { connectionString: opts.url, application_name: applicationName, keepAlive: true };
  // A database that does not answer fails a request after 10 s instead of holding it forever;
  // keepalive notices a peer that vanished without closing the connection.
  const pool = new pg.Pool({ ...config, max: opts.poolSize ?? 10, connectionTimeoutMillis: 10_000, keepAlive: true });
  const where = redactUrl(opts.url);
  let fault: Error | null = null;
  let closing = false;
  let retryTimer: NodeJS.Timeout | null = null;
  const retryMs = opts.retryMs ?? 1000;

  // While the database is unreachable, a probe now and then notices when it is back, so health()
  // recovers without waiting for a request (the embedded store retries its journal the same way).
  const armProbe = () => {
    if (retryTimer || closing) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      if (!closing && fault) q('SELECT 1').catch(() => {});
    }, retryMs);
    retryTimer.unref();
  };
  const noteFault = (err: unknown) => {
    if (!isConnectionError(err)) return;
    if (!fault) opts.logger.warn('store: PostgreSQL is unreachable', { database: where, error: (err as Error).message });
    fault = err as Error;
    armProbe();
  };
  // An idle pooled connection that drops (server restart, pg_terminate_backend) is reported here, not to a query.
  pool.on('error', noteFault);

  /**
   * Every statement is a named (prepared) one: PostgreSQL plans it once per connection instead of
   * on every call. Planning a lookup on the records table, with a partial index per indexed field to
   * weigh, costs about ten times its execution (measured: 0.15-0.18 ms against 0.017 ms); the
   * statements' texts are few (the table and field of a find are spelled in), so the names stay few.
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
      fault = null;
      return res;
    } catch (err) {
      noteFault(err);
      throw err;
    }
  }

  // Schema first: a daemon never runs against a database it has not brought up to date.
  try {
    const client = await pool.connect();
    try {
      await migrateWith(client);
    } finally {
      client.release();
    }
  } catch (err) {
    // The caller names the database (redacted); pg's messages never hold the password.
    await pool.end().catch(() => {});
    throw err;
  }

  const notifier = new Notifier({ client: () => new pg.Client(config), logger: opts.logger });
  try {
    await notifier.start();
  } catch (err) {
    await notifier.close();
    await pool.end().catch(() => {});
    throw err;
  }
  let hitsSinceSweep = 0;

  const store: Store = {
    kind: 'postgres',

    async get<T extends object>(table: string, id: string) {
      const r = await q<Row>('SELECT data FROM appreg_records WHERE tbl = $1 AND id = $2', [table, id]);
      return r.rows[0]?.data as T | undefined;
    },

    async getMany(keys) {
      checkRecordKeys(keys);
      if (!keys.length) return [];
      const k0 = keys[0]!;
      if (keys.length === 1 && !('idFrom' in k0)) return [await store.get(k0.table, k0.id)];
      // One statement for every key: each (tbl, id) is a primary-key lookup (a nested loop over the
      // unnest), an idFrom key one more after the record it names; the ordinality puts the answers
      // back in the order asked.
      const follows = keys.some((k) => 'idFrom' in k);
      const r = await q<{ n: number; data: object }>(follows ? GET_MANY_FOLLOWING : GET_MANY, [
        keys.map((k) => k.table),
        keys.map((k) => ('idFrom' in k ? null : k.id)),
        ...(follows ? [keys.map((k) => ('idFrom' in k ? k.idFrom.key + 1 : null)), keys.map((k) => ('idFrom' in k ? k.idFrom.field : null))] : []),
      ]);
      const out: (object | undefined)[] = new Array(keys.length).fill(undefined);
      for (const row of r.rows) out[row.n - 1] = row.data;
      return out;
    },

    async find<T extends object>(table: string, field: string, value: string) {
      const r = await q<Row>(`SELECT data FROM appreg_records WHERE ${indexed(table, field)}`, [value]);
      return r.rows.map((x) => x.data as T);
    },

    async countWhere(table, field, value) {
      const r = await q<{ n: number }>(`SELECT count(*)::integer AS n FROM appreg_records WHERE ${indexed(table, field)}`, [value]);
      return r.rows[0]?.n ?? 0;
    },

    async findPage<T extends object>(table: string, field: string, value: string, page: PageQuery) {
      if (!Number.isInteger(page.limit) || page.limit < 1) throw new TypeError('store.findPage: limit must be a whole number of 1 or more');
      assertSafeName(page.orderBy);
      // A record whose orderBy is not a number has no key (NULL) and is left out, as on the embedded store;
      // ids compare in "C" collation (bytes), JavaScript's order for them.
      const key = `(CASE WHEN jsonb_typeof(data->'${page.orderBy}') = 'number' THEN (data->>'${page.orderBy}')::float8 END)`;
      const dir = page.desc ? 'DESC' : 'ASC';
      const values: unknown[] = [value, page.limit];
      let beyond = '';
      if (page.after) {
        values.push(page.after.value, page.after.id);
        beyond = ` AND (${key}, id COLLATE "C") ${page.desc ? '<' : '>'} ($3::float8, $4::text COLLATE "C")`;
      }
      const r = await q<Row>(
        `SELECT data FROM appreg_records WHERE ${indexed(table, field)} AND ${key} IS NOT NULL${beyond} ORDER BY ${key} ${dir}, id COLLATE "C" ${dir} LIMIT $2`,
        values,
      );
      return r.rows.map((x) => x.data as T);
    },

    async all<T extends object>(table: string) {
      const r = await q<Row>('SELECT data FROM appreg_records WHERE tbl = $1', [table]);
      return r.rows.map((x) => x.data as T);
    },

    async count(table) {
      const r = await q<{ n: number }>('SELECT count(*)::integer AS n FROM appreg_records WHERE tbl = $1', [table]);
      return r.rows[0]?.n ?? 0;
    },

    async commit(changes: Change[], expect: Expectation[] = []) {
      validateChanges(changes);
      if (!changes.length && !expect.length) return;
      // Stringified here: a value JSON cannot hold fails the commit before anything is sent.
      const [expectJson, changesJson] = commitArgs(changes, expect);
      for (let attempt = 0; ; attempt++) {
        try {
          await q('SELECT appreg_commit($1::jsonb, $2::jsonb)', [expectJson, changesJson]);
          return;
        } catch (err) {
          const c = conflictOf(err);
          if (c) throw new StoreConflict(c.table, c.id);
          if ((err as { code?: string }).code === DEADLOCK_SQLSTATE && attempt < DEADLOCK_RETRIES) continue;
          throw err;
        }
      }
    },

    async claim<T extends object>(req: ClaimRequest) {
      assertSafeName(req.dueField);
      const due = `CASE WHEN jsonb_typeof(data->'${req.dueField}') = 'number' THEN (data->>'${req.dueField}')::float8 END`;
      const leaseUntil = `CASE WHEN jsonb_typeof(data->'leaseUntil') = 'number' THEN (data->>'leaseUntil')::float8 END`;
      // SKIP LOCKED: rows another daemon is claiming right now are left to it, never waited for.
      const r = await q<Row>(
        `UPDATE appreg_records r SET data = r.data || jsonb_build_object('leaseOwner', $3::text, 'leaseUntil', $4::numeric)
         WHERE (r.tbl, r.id) IN (
           SELECT tbl, id FROM appreg_records
           WHERE tbl = $1 AND ${due} <= $2::float8
             AND (${leaseUntil} IS NULL OR ${leaseUntil} <= $2::float8 OR data->>'leaseOwner' = $3)
           ORDER BY ${due}
           LIMIT $5
           FOR UPDATE SKIP LOCKED)
         RETURNING r.data`,
        [req.table, req.now, req.owner, String(req.leaseUntil), req.limit],
      );
      return r.rows.map((x) => x.data as T);
    },

    async hit(key, windowMs, now) {
      if (!(windowMs > 0)) throw new RangeError('hit: windowMs must be positive');
      // One row per key and window length: a window starts at the first hit after the last one ended.
      const r = await q<{ count: number; reset_at: string }>(
        `INSERT INTO appreg_hit_windows AS h (key, window_ms, window_end, count) VALUES ($1, $2, $3::bigint + $2::bigint, 1)
         ON CONFLICT (key, window_ms) DO UPDATE SET
           count = CASE WHEN h.window_end <= $3::bigint THEN 1 ELSE h.count + 1 END,
           window_end = CASE WHEN h.window_end <= $3::bigint THEN EXCLUDED.window_end ELSE h.window_end END
         RETURNING count, window_end AS reset_at`,
        [key, windowMs, now],
      );
      if (++hitsSinceSweep >= HIT_SWEEP_EVERY) {
        hitsSinceSweep = 0;
        q('DELETE FROM appreg_hit_windows WHERE window_end < $1', [now]).catch(() => {});
      }
      const row = r.rows[0];
      return { count: row?.count ?? 1, resetAt: row ? Number(row.reset_at) : now + windowMs };
    },

    async publish(channel, payload) {
      const name = pgChannel(channel);
      checkPayload(payload);
      // Our own listeners hear it only once their LISTEN is in place.
      await notifier.settled();
      await q('SELECT pg_notify($1, $2)', [name, payload]);
    },

    subscribe: (channel, fn) => notifier.subscribe(channel, fn),

    health(): StoreHealth {
      return fault ? { ok: false, reason: `the store cannot reach PostgreSQL: ${fault.message}` } : { ok: true };
    },

    async close() {
      if (closing) return;
      closing = true;
      if (retryTimer) clearTimeout(retryTimer);
      await notifier.close();
      await pool.end();
    },
  };
  return store;
}

/** getMany's statement when every key has its id. */
const GET_MANY = `SELECT k.n::integer AS n, r.data FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(tbl, id, n)
  JOIN appreg_records r ON r.tbl = k.tbl AND r.id = k.id`;

/** getMany's statement with idFrom keys ($3: the 1-based key they take their id from, $4: its field); one snapshot for all. */
const GET_MANY_FOLLOWING = `WITH k AS (SELECT * FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[]) WITH ORDINALITY AS k(tbl, id, via, field, n)),
  d AS (SELECT k.n, r.data FROM k JOIN appreg_records r ON r.tbl = k.tbl AND r.id = k.id WHERE k.via IS NULL)
  SELECT d.n::integer AS n, d.data FROM d
  UNION ALL
  SELECT k.n::integer AS n, r.data FROM k JOIN d ON d.n = k.via
    JOIN appreg_records r ON r.tbl = k.tbl AND r.id = (d.data->>k.field)
  WHERE k.via IS NOT NULL AND jsonb_typeof(d.data->k.field) = 'string'`;

/**
 * The condition of a find on `field` = $1, spelled as its index is (literal table and field) so the
 * planner always picks it; a record whose field is neither a string nor a number is not indexed
 * under it (indexKey).
 */
function indexed(table: string, field: string): string {
  assertIndexed(table, field);
  assertSafeName(table);
  assertSafeName(field);
  return `tbl = '${table}' AND (data->>'${field}') = $1 AND jsonb_typeof(data->'${field}') IN ('string', 'number')`;
}

/**
 * The two jsonb arguments of appreg_commit. Changes: the last one per record (what applying
 * them in order leaves), sorted, as are expectations: commits then lock rows in one global
 * order, which keeps deadlocks between them rare.
 */
function commitArgs(changes: Change[], expect: Expectation[]): [string, string] {
  const key = (x: { table: string; id: string }) => `${x.table}\u0000${x.id}`;
  const byKey = <T extends { table: string; id: string }>(xs: T[]) =>
    [...new Map(xs.map((x) => [key(x), x])).values()].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const ex = byKey(expect).map((e) => (e.value === undefined ? { table: e.table, id: e.id } : { table: e.table, id: e.id, value: e.value }));
  const ch = byKey(changes).map((c) => ({ table: c.table, id: c.id, value: c.value }));
  return [JSON.stringify(ex), JSON.stringify(ch)];
}
