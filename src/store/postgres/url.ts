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

/**
 * The URL with `-c jit=off` added to its `options` parameter (the settings a connection starts
 * with; the driver takes the URL's over its own config, so it goes here). The store's statements
 * touch a few rows by key, but the planner cannot tell how few keys a batch's JSON holds: it
 * costed a 0.1 ms statement past jit_above_cost and compiled it for 10 ms (measured). An
 * operator's own jit setting in the URL comes later and wins.
 */
export function withJitOff(raw: string): string {
  const u = new URL(raw);
  const own = u.searchParams.get('options');
  u.searchParams.set('options', own ? `-c jit=off ${own}` : '-c jit=off');
  return u.toString();
}
