/**
 * Look again every 25 ms until `ok` holds for what `read` gives (what an app does after its ack, what a follower
 * prints), at most `ms`; the last value.
 */
export async function until<T>(read: () => T | Promise<T>, ok: (v: T) => boolean = Boolean, ms = 10_000): Promise<T> {
  for (const end = Date.now() + ms; ; ) {
    const v = await read();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
}
