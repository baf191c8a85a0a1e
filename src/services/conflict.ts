/**
 * Read, check, write with several daemons on one store: a commit names what it read as
 * expectations; when another daemon (or another request of this one) changed it meanwhile the
 * store refuses with StoreConflict, and the whole step runs again on fresh reads. For steps where
 * running again is harmless; exactly-once steps (consuming a code, taking an outbox record) handle a
 * conflict themselves. Every service retries the same way, with this one function.
 */
import { StoreConflict } from '../store/types.js';

const ATTEMPTS = 8;

/** Runs `step` until it does not end in StoreConflict (at most ATTEMPTS times; the last conflict is thrown). */
export async function retryOnConflict<T>(step: () => Promise<T>, attempts = ATTEMPTS): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await step();
    } catch (e) {
      if (!(e instanceof StoreConflict) || i >= attempts) throw e;
      // a short random pause, so that steps which collided do not collide again in lockstep
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 4 * i)));
    }
  }
}

export const isConflict = (e: unknown): e is StoreConflict => e instanceof StoreConflict;
