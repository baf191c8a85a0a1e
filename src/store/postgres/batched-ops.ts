/**
 * The PostgreSQL store's hot calls, batched (batcher.ts): record reads by key, rate-limit hits and
 * commits. Each batch is one statement; every call in it gets exactly the answer it would have got
 * alone, as if the calls had run one after another in the order they were made.
 */
import type pg from 'pg';
import { StoreConflict, type AnyTables, type RecordKey } from '../types.js';
import { createBatcher, type Settled } from './batcher.js';
import { DEADLOCK_SQLSTATE, conflictOf, isConnectionError } from './errors.js';
import { must } from '../../must.js';
import { errnoOf } from '../../unknown-values.js';

export type Query = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<pg.QueryResult<R>>;

/** A commit's two jsonb arguments, already JSON text (commitArgs), and the records they name. */
export interface CommitArgs {
  expect: string;
  changes: string;
  /** table + NUL + id of each record expected (present or absent), and of each written. */
  expectKeys: string[];
  writeKeys: string[];
}

export interface HitCall {
  key: string;
  windowMs: number;
  now: number;
  /** hits counted by this call */
  n: number;
}

/** A deadlock aborts a batch with nothing written: it is run again, a few times. */
const DEADLOCK_RETRIES = 5;

/** At most this many commits per batch (the JSON argument and the statements' work grow with it). */
const COMMITS_PER_BATCH = 32;
const KEYS_PER_BATCH = 500;
const HITS_PER_BATCH = 500;

/** A row read with its version (xmin as text), which `track` remembers for the commit that expects it. */
export type Track = (data: object, version: string) => object;

/** Reads by key in one statement: the keys of every call in a row, idFrom indexes moved along. */
export function batchedReads(q: Query, maxInFlight: number, track: Track) {
  return createBatcher<readonly RecordKey<AnyTables>[], (object | undefined)[]>(
    async (calls) => {
      const keys: RecordKey<AnyTables>[] = [];
      for (const call of calls) {
        const base = keys.length;
        for (const k of call)
          keys.push(
            'idFrom' in k ? { table: k.table, idFrom: { key: k.idFrom.key + base, field: k.idFrom.field } } : k,
          );
      }
      const follows = keys.some((k) => 'idFrom' in k);
      const r = await q<{ n: number; data: object; v: string }>(follows ? GET_MANY_FOLLOWING : GET_MANY, [
        keys.map((k) => k.table),
        keys.map((k) => ('idFrom' in k ? null : k.id)),
        ...(follows
          ? [
              keys.map((k) => ('idFrom' in k ? k.idFrom.key + 1 : null)),
              keys.map((k) => ('idFrom' in k ? k.idFrom.field : null)),
            ]
          : []),
      ]);
      const found: (object | undefined)[] = new Array(keys.length).fill(undefined);
      for (const row of r.rows) found[row.n - 1] = track(row.data, row.v);
      let at = 0;
      return calls.map((call) => {
        const value = found.slice(at, at + call.length);
        at += call.length;
        return { ok: true as const, value };
      });
    },
    { maxInFlight, maxWeight: KEYS_PER_BATCH, weight: (keys) => keys.length },
  );
}

/**
 * Rate-limit hits in one statement. Calls on one window (key and length) are counted together:
 * the row gains their hits, and each call gets the count it would have got alone, in the order made.
 */
export function batchedHits(q: Query, maxInFlight: number) {
  return createBatcher<HitCall, { count: number; resetAt: number }>(
    async (calls) => {
      const windows = new Map<string, { key: string; windowMs: number; now: number; n: number }>();
      const slot = calls.map((c) => {
        const id = `${c.windowMs}|${c.key}`;
        const w = windows.get(id);
        if (w) {
          w.now = Math.max(w.now, c.now);
          const before = w.n;
          w.n += c.n;
          return { id, before };
        }
        windows.set(id, { key: c.key, windowMs: c.windowMs, now: c.now, n: c.n });
        return { id, before: 0 };
      });
      const ws = [...windows.values()];
      // a window that ended by `now` starts again with this batch's calls; otherwise they are added to it
      const r = await q<{ key: string; window_ms: string; count: number; reset_at: string }>(
        `INSERT INTO appreg_hit_windows AS h (key, window_ms, window_end, count)
           SELECT k, w, t + w, n FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::integer[]) AS x(k, w, t, n)
         ON CONFLICT (key, window_ms) DO UPDATE SET
           count = CASE WHEN h.window_end <= EXCLUDED.window_end - h.window_ms THEN EXCLUDED.count ELSE h.count + EXCLUDED.count END,
           window_end = CASE WHEN h.window_end <= EXCLUDED.window_end - h.window_ms THEN EXCLUDED.window_end ELSE h.window_end END
         RETURNING key, window_ms, count, window_end AS reset_at`,
        [ws.map((w) => w.key), ws.map((w) => w.windowMs), ws.map((w) => w.now), ws.map((w) => w.n)],
      );
      const after = new Map(r.rows.map((row) => [`${row.window_ms}|${row.key}`, row]));
      return calls.map((c, i) => {
        // the hits of the calls before this one on its window, then its own
        const { id, before } = must(slot[i]);
        const row = after.get(id);
        const total = must(windows.get(id)).n;
        return {
          ok: true as const,
          value: row
            ? { count: row.count - total + before + c.n, resetAt: Number(row.reset_at) }
            : { count: before + c.n, resetAt: c.now + c.windowMs },
        };
      });
    },
    { maxInFlight, maxWeight: HITS_PER_BATCH },
  );
}

/**
 * Commits in one statement and one transaction (one WAL flush for all of them): appreg_commit_batch
 * decides every commit's expectations against the records as they were before the batch, so a
 * batch ends before a commit that expects a record an earlier commit of it writes (that one goes
 * first in the next batch, and sees the write). A commit whose expectations fail writes nothing
 * and the others still land. A deadlock (nothing written) runs the batch again; any other error
 * runs the commits one by one, so that only the commit at fault gets it.
 */
export function batchedCommits(q: Query, maxInFlight: number) {
  const one = async (c: CommitArgs): Promise<Settled<void>> => {
    for (let attempt = 0; ; attempt++) {
      try {
        await q('SELECT appreg_commit($1::jsonb, $2::jsonb, false)', [c.expect, c.changes]);
        return { ok: true, value: undefined };
      } catch (err) {
        const conflict = conflictOf(err);
        if (conflict) return { ok: false, error: new StoreConflict(conflict.table, conflict.id) };
        if (errnoOf(err) === DEADLOCK_SQLSTATE && attempt < DEADLOCK_RETRIES) continue;
        return { ok: false, error: err };
      }
    }
  };
  // A commit goes only when no commit before it still unsent or at the database writes a record it
  // expects: the batch decides expectations on the records as they were before it.
  const writing = new Map<string, number>(); // record key → batches at the database that write it
  const joinable = () => {
    const ahead = new Set<string>();
    return (c: CommitArgs) => {
      if (c.expectKeys.some((k) => ahead.has(k) || writing.has(k))) return false;
      for (const k of c.writeKeys) ahead.add(k);
      return true;
    };
  };
  const countWriting = (calls: CommitArgs[], by: number) => {
    for (const c of calls) {
      for (const k of c.writeKeys) {
        const n = (writing.get(k) ?? 0) + by;
        if (n > 0) writing.set(k, n);
        else writing.delete(k);
      }
    }
  };
  return createBatcher<CommitArgs, void>(
    async (calls) => {
      countWriting(calls, 1);
      try {
        return await commitBatch(calls);
      } finally {
        countWriting(calls, -1);
      }
    },
    { maxInFlight, maxWeight: COMMITS_PER_BATCH, joinable },
  );

  async function commitBatch(calls: CommitArgs[]): Promise<Settled<void>[]> {
    const arg = `[${calls.map((c) => `[${c.expect},${c.changes}]`).join(',')}]`;
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await q<{ out: Array<{ table: string; id: string } | null> }>(
          'SELECT appreg_commit_batch($1::jsonb) AS out',
          [arg],
        );
        const out = r.rows[0]?.out ?? [];
        return calls.map((_c, i) => {
          const conflict = out[i];
          return conflict
            ? { ok: false as const, error: new StoreConflict(String(conflict.table), String(conflict.id)) }
            : { ok: true as const, value: undefined };
        });
      } catch (err) {
        if (isConnectionError(err)) throw err;
        if (errnoOf(err) === DEADLOCK_SQLSTATE && attempt < DEADLOCK_RETRIES) continue;
        const each: Settled<void>[] = [];
        for (const c of calls) each.push(await one(c));
        return each;
      }
    }
  }
}

/** getMany's statement when every key has its id. */
const GET_MANY = `SELECT k.n::integer AS n, r.data, r.xmin::text AS v FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(tbl, id, n)
  JOIN appreg_records r ON r.tbl = k.tbl AND r.id = k.id`;

/**
 * getMany's statement with idFrom keys ($3: the 1-based key they take their id from, $4: its field),
 * followed hop by hop (a key may name one that is itself idFrom); one snapshot for all.
 */
const GET_MANY_FOLLOWING = `WITH RECURSIVE k AS (SELECT * FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[]) WITH ORDINALITY AS k(tbl, id, via, field, n)),
  d(n, data, v) AS (
    SELECT k.n, r.data, r.xmin::text FROM k JOIN appreg_records r ON r.tbl = k.tbl AND r.id = k.id WHERE k.via IS NULL
    UNION ALL
    SELECT k.n, r.data, r.xmin::text FROM d JOIN k ON k.via = d.n
      JOIN appreg_records r ON r.tbl = k.tbl AND r.id = (d.data->>k.field)
    WHERE jsonb_typeof(d.data->k.field) = 'string')
  SELECT n::integer AS n, data, v FROM d`;
