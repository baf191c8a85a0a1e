/**
 * A code's life after the consent screen issued it, seen from outside the exchange: the sweep that
 * forgets expired codes (and consumed ones once their reuse need no longer be recognised), and the
 * state `appreg authorize --follow` asks about.
 */
import { sha256 } from '../../crypto.js';
import type { ServiceContext } from '../context.js';
import { OAUTH_TABLES, type StoredCodeRecord } from '../../model/oauth.js';

/** A sweep reads at most this many minutes one by one (a day and an hour); after a longer gap it reads every code. */
const MAX_MINUTES_PER_SWEEP = 25 * 60;

/** The sweep and the state query, over the store's codes table. */
export function createCodeSweep(ctx: Pick<ServiceContext, 'store' | 'clock'>) {
  const { store, clock } = ctx;

  /** The last minute whose codes this daemon swept; undefined until its first sweep. */
  let sweptThrough: number | undefined;

  /**
   * Drop expired codes. A consumed code is kept for a day after its exchange (token-issue.ts
   * CONSUMED_CODE_MEMORY_MS), so a replay long after the code's own expiry (a leaked code tried
   * later) is still recognised and revokes what the code issued (docs/security.md §2).
   */
  async function sweep(): Promise<number> {
    const now = clock.now();
    const minute = Math.floor(now / 60_000);
    const due = (c: StoredCodeRecord) =>
      ('consumedAt' in c && c.forgetAt !== undefined ? c.forgetAt : c.expiresAt) <= now;
    const gone: string[] = [];
    const forget = (c: StoredCodeRecord) => void (due(c) && gone.push(c.id));
    // The first sweep (or one after a long gap) reads every code: records written before codes carried
    // their sweep minute have none. It scans them one at a time: read at once, the 200,000 codes of
    // the token benchmark were some 250 MB of objects alive together. Later sweeps read only the
    // minutes that ended since the last one.
    if (sweptThrough === undefined || minute - sweptThrough > MAX_MINUTES_PER_SWEEP)
      await store.scan(OAUTH_TABLES.codes, forget);
    else
      for (let m = sweptThrough + 1; m <= minute; m++)
        (await store.find(OAUTH_TABLES.codes, 'sweepMinute', String(m))).forEach(forget);
    // the current minute is read again next time: its codes are not all due yet
    sweptThrough = minute - 1;
    // deleted as found: an exchange of one of them meanwhile expected it, so it runs again and finds none
    if (gone.length)
      await store.transaction(async (tx) => {
        for (const id of gone) tx.delete(OAUTH_TABLES.codes, id);
      });
    return gone.length;
  }

  /**
   * Whether the app has exchanged `code` (`appreg authorize --follow` asks, so it can say so even
   * when the app's redirect page never answers). Knowing the code is what entitles one to ask.
   */
  async function codeState(code: string | undefined): Promise<'exchanged' | 'waiting' | 'unknown'> {
    if (!code || code.length > 512) return 'unknown';
    const rec = await store.get(OAUTH_TABLES.codes, sha256(code));
    if (!rec) return 'unknown';
    if ('consumedAt' in rec) return 'exchanged';
    return rec.expiresAt > clock.now() ? 'waiting' : 'unknown';
  }

  return { sweep, codeState };
}

export type CodeSweep = ReturnType<typeof createCodeSweep>;
