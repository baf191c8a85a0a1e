/**
 * `appreg db import` and `appreg db export`: every record from a data directory (the embedded
 * store) into an empty PostgreSQL database, or back. Neither ever overwrites: the target must
 * hold no records. Both verify the copy (counts and digests per table, digest.ts).
 *
 * The data directory is read through the embedded store itself, on a copy of its store files:
 * the store's own recovery applies (journals replayed, a torn tail ignored), and the source is
 * left exactly as it was. Closing the copy folds it into one appreg.json, which is then read
 * as a whole to list every table (the Store interface lists records of a named table only).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openEmbeddedStore } from '../embedded-store.js';
import { DATA_FILE, JOURNAL_RE } from '../format.js';
import type { AnyTables, Change, StoreLogger } from '../types.js';
import { differences, summarize, type TableData, type TableSummary } from './digest.js';
import { migrateWith, withClient } from './migrations.js';
import { errnoOf, fieldOf, isRecord, recordOr } from '../../unknown-values.js';

/** Records per INSERT (import) or per commit (export). */
const BATCH = 500;

/** Why a copy was refused before anything was written. */
export class TransferRefused extends Error {}

export interface TransferResult {
  tables: TableSummary[];
  records: number;
}

const total = (s: TableSummary[]) => s.reduce((n, x) => n + x.records, 0);

/** The tables of a closed store's appreg.json (every table it holds), or empty without one. */
function readDataFileTables(dir: string): TableData {
  const file = path.join(dir, DATA_FILE);
  if (!fs.existsSync(file)) return new Map();
  const doc: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
  const data: TableData = new Map();
  for (const [t, recs] of Object.entries(recordOr(fieldOf(doc, 'tables')) ?? {})) {
    const records = new Map<string, object>();
    // the store just closed wrote the file: each record is an object (one typeof each, off any hot path)
    for (const [id, rec] of Object.entries(recordOr(recs) ?? {})) if (isRecord(rec)) records.set(id, rec);
    data.set(t, records);
  }
  return data;
}

/** Every record of the embedded store in `dir`, read from a copy of its files (the source is not touched). */
export async function readDataDir(dir: string, logger: StoreLogger): Promise<TableData> {
  const names = fs.readdirSync(dir).filter((f) => f === DATA_FILE || JOURNAL_RE.test(f));
  if (!names.length) throw new TransferRefused(`${dir} holds no appreg data (no ${DATA_FILE} or journal)`);
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-import-'));
  try {
    for (const f of names) fs.copyFileSync(path.join(dir, f), path.join(copy, f));
    const store = await openEmbeddedStore({ dir: copy, logger, compactIdleMs: 0, fsync: false });
    await store.close();
    return readDataFileTables(copy);
  } finally {
    fs.rmSync(copy, { recursive: true, force: true });
  }
}

/** Every record in the database, from one snapshot. */
async function readDatabase(client: pg.ClientBase): Promise<TableData> {
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  try {
    const data: TableData = new Map();
    const res = await client.query<{ tbl: string; id: string; data: object }>(
      'SELECT tbl, id, data FROM appreg_records',
    );
    for (const r of res.rows) {
      let t = data.get(r.tbl);
      if (!t) data.set(r.tbl, (t = new Map()));
      t.set(r.id, r.data);
    }
    return data;
  } finally {
    await client.query('COMMIT');
  }
}

/** Copy `data` into the (migrated, empty) database at `url` in one transaction, then verify it. */
export async function importIntoDatabase(url: string, data: TableData): Promise<TransferResult> {
  const source = summarize(data);
  return withClient(url, 'appreg-db', async (client) => {
    await migrateWith(client);
    await client.query('BEGIN');
    try {
      // Held to the end: no daemon writes between the emptiness check and the copy.
      await client.query('LOCK TABLE appreg_records IN SHARE ROW EXCLUSIVE MODE');
      const n =
        (await client.query<{ n: number }>('SELECT count(*)::integer AS n FROM appreg_records')).rows[0]?.n ?? 0;
      if (n > 0)
        throw new TransferRefused(
          `the database already holds ${n} records: import only into an empty database (nothing was written)`,
        );
      let batch: Array<{ t: string; i: string; v: object }> = [];
      const flush = async () => {
        if (!batch.length) return;
        await client.query(
          `INSERT INTO appreg_records (tbl, id, data) SELECT x->>'t', x->>'i', x->'v' FROM jsonb_array_elements($1::jsonb) AS r(x)`,
          [JSON.stringify(batch)],
        );
        batch = [];
      };
      for (const [table, records] of data) {
        for (const [id, value] of records) {
          batch.push({ t: table, i: id, v: value });
          if (batch.length >= BATCH) await flush();
        }
      }
      await flush();
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    }
    const copied = summarize(await readDatabase(client));
    const diff = differences(source, copied);
    if (diff.length) throw new Error(`the copy does not match the data directory:\n  ${diff.join('\n  ')}`);
    return { tables: copied, records: total(copied) };
  });
}

/** Every file in `dir` that is not the lock: what makes a target "not empty". */
export function occupied(dir: string): string[] {
  try {
    return fs.readdirSync(dir).filter((f) => f !== 'daemon.lock');
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return [];
    throw err;
  }
}

/**
 * Copy every record of the database at `url` into the new embedded store in `dir`, then verify it.
 * The tables named in `outside` (what the embedded store keeps in files of its own: the delivery
 * log, uploaded files' bytes) are not written to the store: they come back in `outside`.
 */
export async function exportToDataDir(
  url: string,
  dir: string,
  logger: StoreLogger,
  outsideTables: readonly string[] = [],
): Promise<TransferResult & { outside: TableData }> {
  const all = await withClient(url, 'appreg-db', async (client) => {
    await migrateWith(client);
    return readDatabase(client);
  });
  const outside: TableData = new Map();
  const data: TableData = new Map();
  for (const [table, records] of all) (outsideTables.includes(table) ? outside : data).set(table, records);
  const source = summarize(data);
  // whatever the database holds is copied as it is, table by table: records of any table
  const store = await openEmbeddedStore<AnyTables>({ dir, logger, compactIdleMs: 0 });
  try {
    let batch: Change<AnyTables>[] = [];
    for (const [table, records] of data) {
      for (const [id, value] of records) {
        batch.push({ table, id, value });
        if (batch.length >= BATCH) {
          await store.commit(batch);
          batch = [];
        }
      }
    }
    if (batch.length) await store.commit(batch);
  } finally {
    await store.close();
  }
  const copied = summarize(readDataFileTables(dir));
  const diff = differences(source, copied);
  if (diff.length) throw new Error(`the copy does not match the database:\n  ${diff.join('\n  ')}`);
  return { tables: copied, records: total(copied), outside };
}
