/** Connection strings in logs and errors: never with their password. */

/**
 * The URL with its password (user:password@ and a `password=` query parameter) replaced by "***",
 * for logs and messages. Something that is not a URL is shown as "(unparsable database URL)",
 * since it may still hold a password somewhere.
 */
export function redactUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return '(unparsable database URL)';
  }
  if (u.password) u.password = '***';
  if (u.searchParams.has('password')) u.searchParams.set('password', '***');
  return u.toString();
}

/** Whether `raw` is a postgres: or postgresql: URL (what --database-url accepts). */
export function isPostgresUrl(raw: string): boolean {
  try {
    const u = new URL(raw);
    return u.protocol === 'postgres:' || u.protocol === 'postgresql:';
  } catch {
    return false;
  }
}
