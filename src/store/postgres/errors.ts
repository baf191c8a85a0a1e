/** How PostgreSQL errors map onto the store's: conflicts, and faults of the connection itself. */

/** SQLSTATE raised by appreg_commit when an expectation does not hold (DETAIL: {"table","id"} as JSON). */
export const CONFLICT_SQLSTATE = 'AR409';
/** deadlock_detected: two commits locked the same records in another order; nothing was written. */
export const DEADLOCK_SQLSTATE = '40P01';

interface PgLikeError {
  code?: string;
  message?: string;
  detail?: string;
}

/**
 * Whether the error means the database could not be reached or the connection dropped (as
 * opposed to a query the database refused): node errors, SQLSTATE classes 08 (connection
 * exception) and 57P0x (shutdown, cannot connect now), and pg's own "Connection terminated".
 */
export function isConnectionError(err: unknown): boolean {
  const e = err as PgLikeError | null;
  if (!e || typeof e !== 'object') return false;
  const code = e.code ?? '';
  if (/^E[A-Z]+$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, ETIMEDOUT, ENOTFOUND, EPIPE…
  if (code.startsWith('08') || /^57P0[1-3]$/.test(code)) return true;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    e.message ?? '',
  );
}

/** The table and id of a conflict raised by appreg_commit, or null for any other error. */
export function conflictOf(err: unknown): { table: string; id: string } | null {
  const e = err as PgLikeError | null;
  if (!e || e.code !== CONFLICT_SQLSTATE) return null;
  try {
    const d = JSON.parse(e.detail ?? '') as { table?: unknown; id?: unknown };
    return { table: String(d.table), id: String(d.id) };
  } catch {
    return { table: '?', id: '?' };
  }
}
