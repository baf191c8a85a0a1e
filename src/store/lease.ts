/**
 * Leases on records (store.claim writes them): a daemon leases a due record to act on it, and the
 * same daemon's next claim renews the leases it holds on records still due. A change it makes with
 * the record as leased as its expectation then conflicts with that renewal, which is no rival change.
 */
import { isDeepStrictEqual } from 'node:util';

/** The fields store.claim writes on a record it leases. */
export interface Leased {
  leaseOwner?: string;
  leaseUntil?: number;
  /** The owner of the lease (one that ran out) this one took over (store/types.ts ClaimRequest). */
  leaseTakenFrom?: string;
}

/**
 * Whether `current` is `before` with only its lease renewed, by the same owner (its own lease taken
 * over by itself, once it ran out, is such a renewal too).
 */
export function onlyLeaseRenewed<T extends Leased>(before: T, current: T): boolean {
  const rest = ({ leaseUntil: _until, leaseTakenFrom: _from, ...r }: T): unknown => JSON.parse(JSON.stringify(r));
  return before.leaseOwner === current.leaseOwner && isDeepStrictEqual(rest(before), rest(current));
}
