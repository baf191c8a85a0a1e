/**
 * The delivery log moved between the stores by `appreg db import` and `db export`: the embedded
 * store keeps it as JSON lines under <data-dir>/deliveries/ (file-log.ts), PostgreSQL as records of
 * three tables (store-log.ts). Both hold the same deliveries, made of the same entries (a beginning,
 * attempts, a state); only their order numbers are each backend's own, so copies are compared by
 * the deliveries.
 */
import path from 'node:path';
import { readAllLogFiles, writeLogFile } from './file-log.js';
import { DELIVERY_LOG_TABLES, deliveriesOfRecords, logRecordsOf } from './store-log.js';
import type { DeliveryRecord } from '../model/delivery.js';

export { DELIVERY_LOG_TABLES, deliveriesOfRecords, logRecordsOf };

/** Every delivery of the log under `<dataDir>/deliveries/`, in the order of its last change; none without one. */
export const readLogDir = (dataDir: string): DeliveryRecord[] => readAllLogFiles(path.join(dataDir, 'deliveries'));

/** Write the deliveries as the embedded store's log under `<dataDir>/deliveries/` (which must hold none). */
export const writeLogDir = (dataDir: string, recs: DeliveryRecord[]): void =>
  writeLogFile(path.join(dataDir, 'deliveries'), recs);
