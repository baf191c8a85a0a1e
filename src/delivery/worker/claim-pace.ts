/**
 * When the worker claims due events: at most `everyMs` apart while it polls faster (a claim reads every pending record,
 * and a fan-out keeps hundreds pending), and at each retry time this daemon scheduled all the same (`wake`), kept to
 * `grainMs` so that many retries due within one grain need one claim. What another daemon left (a lease that ran out)
 * is found `everyMs` late at the most, as by an idle worker's poll.
 */
export interface ClaimPace {
  /** A retry this daemon scheduled is due at `at`. */
  wake(at: number): void;
  /** Whether a poll at `now` claims. */
  due(now: number): boolean;
  /** A claim at `now`: the retries woken for up to now are served by it. */
  claiming(now: number): void;
  /** Claim again at the next poll (more may be due, or the claim failed). */
  again(now: number): void;
}

export function createClaimPace(everyMs: number, grainMs: number): ClaimPace {
  /** The next claim at `claimAt` at the latest (the first poll claims), or at a woken time (`firstWake`: the first). */
  let claimAt = 0;
  const wakes = new Set<number>();
  let firstWake = Infinity;
  return {
    wake(at) {
      const grained = Math.ceil(at / grainMs) * grainMs;
      wakes.add(grained);
      firstWake = Math.min(firstWake, grained);
    },
    due: (now) => now >= claimAt || now >= firstWake,
    claiming(now) {
      claimAt = now + everyMs;
      firstWake = Infinity;
      for (const at of wakes) {
        if (at <= now) wakes.delete(at);
        else firstWake = Math.min(firstWake, at);
      }
    },
    again(now) {
      claimAt = now;
    },
  };
}
