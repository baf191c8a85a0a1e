/**
 * How long a test waits for a condition that depends on I/O only (a request to arrive, a process to
 * print, a write to land): long enough that a loaded machine meets it, since a test never waits for
 * time to pass (it advances its clock: test/helpers/test-clock.ts).
 */
export const CONDITION_MS = 30_000;

/**
 * Look again every 25 ms until `ok` holds for what `read` gives (what an app does after its ack, what a follower
 * prints), at most `ms`; the last value.
 */
export async function until<T>(
  read: () => T | Promise<T>,
  ok: (v: T) => boolean = Boolean,
  ms = CONDITION_MS,
): Promise<T> {
  for (const end = Date.now() + ms; ;) {
    const v = await read();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
}
