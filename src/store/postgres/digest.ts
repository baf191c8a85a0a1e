/**
 * What `appreg db import/export` compare after a copy: per table, the number of records and a
 * digest of every one of them. Records are hashed as canonical JSON (keys sorted), because jsonb
 * keeps keys in an order of its own: equal records give equal digests on both stores.
 */
import crypto from 'node:crypto';
import { isRecord } from '../../unknown-values.js';

/** Every record of every table: table → id → record. */
export type TableData = Map<string, Map<string, object>>;

export interface TableSummary {
  table: string;
  records: number;
  /** sha256 over the records sorted by id, hex. */
  digest: string;
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isRecord(v)) {
    return `{${Object.keys(v)
      .filter((k) => v[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** One summary per table, by table name; empty tables are left out (neither store keeps them). */
export function summarize(data: TableData): TableSummary[] {
  const out: TableSummary[] = [];
  for (const [table, records] of data) {
    if (!records.size) continue;
    const h = crypto.createHash('sha256');
    for (const id of [...records.keys()].sort()) h.update(`${JSON.stringify(id)}\t${canonical(records.get(id))}\n`);
    out.push({ table, records: records.size, digest: h.digest('hex') });
  }
  return out.sort((a, b) => (a.table < b.table ? -1 : a.table > b.table ? 1 : 0));
}

/** The tables whose count or digest differ (both lists from summarize), as one line each. */
export function differences(from: TableSummary[], to: TableSummary[]): string[] {
  const byName = new Map(to.map((s) => [s.table, s]));
  const out: string[] = [];
  for (const s of from) {
    const o = byName.get(s.table);
    byName.delete(s.table);
    if (!o) out.push(`${s.table}: ${s.records} records, none copied`);
    else if (o.records !== s.records) out.push(`${s.table}: ${s.records} records, ${o.records} copied`);
    else if (o.digest !== s.digest)
      out.push(`${s.table}: the records differ (digest ${s.digest.slice(0, 12)} vs ${o.digest.slice(0, 12)})`);
  }
  for (const o of byName.values()) out.push(`${o.table}: ${o.records} records that were not in the source`);
  return out;
}
