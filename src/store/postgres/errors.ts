/** How PostgreSQL errors map onto the store's: conflicts, and faults of the connection itself. */

import { errnoOf, fieldOf, isRecord, stringOr } from '../../unknown-values.js';

/** SQLSTATE raised by appreg_commit when an expectation does not hold (DETAIL: {"table","id"} as JSON). */
export const CONFLICT_SQLSTATE = 'AR409';
/** deadlock_detected: two commits locked the same records in another order; nothing was written. */
export const DEADLOCK_SQLSTATE = '40P01';

/** The text in `field` of a thrown error (pg's errors carry message and detail), or ''. */
const textOf = (err: unknown, field: string): string => stringOr(fieldOf(err, field)) ?? '';

/**
 * Whether the error means the database could not be reached or the connection dropped (as
 * opposed to a query the database refused): node errors, SQLSTATE classes 08 (connection
 * exception) and 57P0x (shutdown, cannot connect now), and pg's own "Connection terminated".
 */
export function isConnectionError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const code = errnoOf(err) ?? '';
  if (/^E[A-Z]+$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, ETIMEDOUT, ENOTFOUND, EPIPE…
  if (code.startsWith('08') || /^57P0[1-3]$/.test(code)) return true;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    textOf(err, 'message'),
  );
}

/** The table and id of a conflict raised by appreg_commit, or null for any other error. */
export function conflictOf(err: unknown): { table: string; id: string } | null {
  if (errnoOf(err) !== CONFLICT_SQLSTATE) return null;
  try {
    const d: unknown = JSON.parse(textOf(err, 'detail'));
    if (!isRecord(d)) return { table: '?', id: '?' };
    return { table: String(d.table), id: String(d.id) };
  } catch {
    return { table: '?', id: '?' };
  }
}
