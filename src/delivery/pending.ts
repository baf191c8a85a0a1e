/**
 * Pending events: one record per event waiting for an attempt, in the main store so it survives
 * a restart and is seen by every daemon of a shared store. An attempt is made by the daemon that
 * holds the record's lease (store.claim, or the creating daemon, which writes it already leased to
 * itself); a daemon killed mid-attempt loses its lease when it runs out and another one takes over.
 */
import { StoreConflict, type Change, type Store } from '../store/types.js';
import { onlyLeaseRenewed } from '../store/lease.js';
import type { PendingDelivery } from '../model/delivery.js';

export const PENDING_TABLE = 'pendingDeliveries';

/** The record without its lease: any daemon may claim it once it is due. */
function released(p: PendingDelivery, nextAt = p.nextAt): PendingDelivery {
  const { leaseOwner: _owner, leaseUntil: _until, leaseTakenFrom: _from, ...rest } = p;
  return { ...rest, nextAt };
}

/**
 * Attempts of `p` that may have reached the app without their outcome being recorded: those counted
 * in the record, and the one of the lease this daemon's claim took over (a daemon that held it died,
 * or could not write the outcome, mid-attempt). A lease is only ever held to make an attempt, and an
 * attempt's outcome ends the lease (released or deleted) in the same write, so a lease that ran out
 * means an attempt whose outcome nobody recorded.
 */
export const mayHaveBeenSent = (p: PendingDelivery): number =>
  (p.unrecorded ?? 0) + (p.leaseTakenFrom === undefined ? 0 : 1);

/** `p` released for a later attempt, the attempts of its lease that may have reached the app counted. */
export const releasedAfter = (p: PendingDelivery, nextAt: number): PendingDelivery => {
  const next = released(p, nextAt);
  const unrecorded = mayHaveBeenSent(p);
  return unrecorded ? { ...next, unrecorded } : next;
};

/** Whether another daemon holds a live lease on `p` (an attempt of it runs there now). */
export const leasedElsewhere = (p: PendingDelivery, owner: string, now: number): boolean =>
  p.leaseOwner !== undefined && p.leaseOwner !== owner && (p.leaseUntil ?? 0) > now;

/** Whose change of a pending record stands: the attempt's while the lease is this daemon's (a claim may renew it). */
export type Ours = (cur: PendingDelivery) => boolean;

/**
 * Replace `held` (the record as this daemon read or wrote it) by `next` (null: delete), with
 * `extra` changes in the same commit. A conflict means the record changed meanwhile: it is read
 * again and the commit retried while `stillMine(current)` says the change is still ours to make;
 * resolves false when it is not (another daemon took the event over after our lease ran out, or it
 * was cancelled or ended elsewhere). A change that only renewed the same owner's lease (this
 * daemon's own poll: store.claim renews the leases it holds on due records) is no rival and does
 * not count against the few retries other changes get: polls that come back to back (a loaded
 * machine) may land between every read and commit, and a write given up on left a delivered event
 * pending, to be attempted again.
 */
export async function replacePending(
  store: Store,
  held: PendingDelivery,
  next: PendingDelivery | null,
  stillMine: Ours,
  extra: Change[] = [],
): Promise<boolean> {
  let expect = held;
  for (let rivals = 0; ;) {
    try {
      await store.commit(
        [{ table: PENDING_TABLE, id: held.id, value: next }, ...extra],
        [{ table: PENDING_TABLE, id: held.id, value: expect }],
      );
      return true;
    } catch (e) {
      if (!(e instanceof StoreConflict)) throw e;
      const current = await store.get(PENDING_TABLE, held.id);
      if (!current || !stillMine(current)) return false;
      if (!onlyLeaseRenewed(expect, current) && ++rivals >= MAX_RIVAL_CHANGES) return false;
      expect = current;
    }
  }
}

/** Conflicts with a change other than a lease renewal that replacePending retries after, at the most. */
const MAX_RIVAL_CHANGES = 4;

/**
 * For a store only one daemon uses (the embedded one; the composition root decides): leases held by
 * an earlier run of this daemon are void (it is gone); the events it was attempting are due now, as
 * they were before leases existed, and each counts the attempt it was under (it may have reached the
 * app: the next one is marked a retry). Where daemons share the store, a lease runs out instead and
 * the claim that takes it over says so (leaseTakenFrom). Resolves to when each of the others is due (its
 * retry's time, which no wake of this run's worker knows).
 */
export async function takeOverDeadLeases(store: Store, owner: string, now: number): Promise<number[]> {
  const later: number[] = [];
  for (const p of await store.all(PENDING_TABLE)) {
    if (leasedElsewhere(p, owner, now)) {
      const next = { ...released(p, Math.min(p.nextAt, now)), unrecorded: mayHaveBeenSent(p) + 1 };
      await replacePending(store, p, next, () => false);
    } else if (p.nextAt > now) later.push(p.nextAt);
  }
  return later;
}
