/**
 * The embedded store's answer to findPage: for each (orderBy, field, value) a page was asked of,
 * the records under that index key as a list sorted by (orderBy value, id), kept in step by every
 * change of the table (Tables.#set), so a page is a binary search and a slice: a channel's newest
 * 50 messages cost the same with 10 or 10,000 in the channel.
 *
 * Lists are made at the first page asked of a key (one parse of its records) and dropped when the
 * key has no record left. Records whose orderBy is not a finite number are in no list.
 */
import { indexKey } from './indexes.js';
import { must } from '../must.js';
import { fieldOf } from '../unknown-values.js';

/** A record's place in a list: its orderBy value and id. */
export interface Place {
  k: number;
  id: string;
}

/** Place order: value, then id as JavaScript compares strings. */
const comparePlaces = (a: Place, b: Place) => a.k - b.k || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The orderBy value of a record, or undefined when it is not a finite number. */
function orderValue(rec: object, orderBy: string): number | undefined {
  const v = fieldOf(rec, orderBy);
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** The first index of `list` whose place is after `p` (or at it, when `inclusive`). */
function bound(list: readonly Place[], p: Place, inclusive: boolean): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const c = comparePlaces(must(list[mid]), p);
    if (c < 0 || (c === 0 && !inclusive)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

interface Spec {
  orderBy: string;
  field: string;
  /** index key → its records' places, sorted. */
  lists: Map<string, Place[]>;
}

/** The sorted lists of one table. */
export class OrderedLists {
  readonly #specs: Spec[] = [];

  /** The list of (orderBy, field, value), made from `records` (the key's records, parsed) when there is none yet. */
  list(orderBy: string, field: string, value: string, records: () => Iterable<[string, object]>): Place[] {
    let spec = this.#specs.find((s) => s.orderBy === orderBy && s.field === field);
    if (!spec) this.#specs.push((spec = { orderBy, field, lists: new Map() }));
    let list = spec.lists.get(value);
    if (!list) {
      list = [];
      for (const [id, rec] of records()) {
        const k = orderValue(rec, orderBy);
        if (k !== undefined) list.push({ k, id });
      }
      list.sort(comparePlaces);
      if (list.length) spec.lists.set(value, list);
    }
    return list;
  }

  /** Follow one change of a record: `before` and `after` as parsed (undefined: absent). */
  change(id: string, before: object | undefined, after: object | undefined): void {
    for (const { orderBy, field, lists } of this.#specs) {
      const oldKey = before && indexKey(before, field);
      const oldK = before && orderValue(before, orderBy);
      const old = oldKey !== undefined ? lists.get(oldKey) : undefined;
      if (old && oldK !== undefined) {
        const i = bound(old, { k: oldK, id }, true);
        if (old[i]?.id === id) old.splice(i, 1);
        if (!old.length) lists.delete(must(oldKey));
      }
      const newKey = after && indexKey(after, field);
      const newK = after && orderValue(after, orderBy);
      const list = newKey !== undefined ? lists.get(newKey) : undefined;
      if (list && newK !== undefined) {
        const p = { k: newK, id };
        const last = list[list.length - 1];
        // new posts come last: a push, not a search
        if (!last || comparePlaces(last, p) < 0) list.push(p);
        else list.splice(bound(list, p, true), 0, p);
      }
    }
  }
}

/** The places of one page of `list`: up to `limit` after `after` (exclusive) in the direction asked, in that order. */
export function pageOf(list: readonly Place[], desc: boolean, limit: number, after?: Place): Place[] {
  if (!desc) {
    const from = after ? bound(list, after, false) : 0;
    return list.slice(from, from + limit);
  }
  const to = after ? bound(list, after, true) : list.length; // exclusive end
  return list.slice(Math.max(0, to - limit), to).reverse();
}
