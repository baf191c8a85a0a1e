/**
 * The delivery log moved between the stores by `appreg db import` and `db export`: the embedded
 * store keeps it as JSON lines under <data-dir>/deliveries/ (log.ts), PostgreSQL as records of the
 * table deliveryLog (store-log.ts). What both hold of a delivery is the same record; only the
 * order of puts (`seq`) is the database's own, so copies are compared by the deliveries.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FILE_RE, type DeliveryRecord } from './log.js';
import { DELIVERY_LOG_TABLE, type StoredDelivery } from './store-log.js';

export { DELIVERY_LOG_TABLE };

/** Every delivery of the JSON lines under `<dataDir>/deliveries/`, oldest put first (the last line of an id wins); none without them. */
export function readLogDir(dataDir: string): DeliveryRecord[] {
  const dir = path.join(dataDir, 'deliveries');
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((f) => FILE_RE.test(f)).sort();
  } catch {
    return [];
  }
  const latest = new Map<string, DeliveryRecord>();
  for (const f of names) {
    for (const line of fs.readFileSync(path.join(dir, f), 'utf8').split('\n')) {
      if (!line) continue;
      try {
        const rec = JSON.parse(line) as DeliveryRecord;
        if (rec && typeof rec.id === 'string') {
          latest.delete(rec.id); // a later put moves it to the end
          latest.set(rec.id, rec);
        }
      } catch {
        /* a torn line from a crash, as the log itself skips it */
      }
    }
  }
  return [...latest.values()];
}

/** The deliveries as records of the database's table, in the same order (`seq`). */
export function asStoreRecords(recs: DeliveryRecord[]): Map<string, StoredDelivery> {
  return new Map(recs.map((rec, i) => [rec.id, { id: rec.id, appId: rec.appId, ownerId: rec.ownerId, createdAt: rec.createdAt, updatedAt: rec.updatedAt, seq: i, rec }]));
}

/** The deliveries of the database's records, in the order they were put. */
export function fromStoreRecords(records: Map<string, object>): DeliveryRecord[] {
  return ([...records.values()] as StoredDelivery[]).sort((a, b) => a.seq - b.seq).map((s) => s.rec);
}

/** Write the deliveries as the embedded store's log: one line each, oldest put first, 0600 in a 0700 folder. */
export function writeLogDir(dataDir: string, recs: DeliveryRecord[]): void {
  if (!recs.length) return;
  const dir = path.join(dataDir, 'deliveries');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(dir, 'log-00000001.jsonl'), recs.map((r) => JSON.stringify(r) + '\n').join(''), { mode: 0o600, flag: 'wx' });
}
