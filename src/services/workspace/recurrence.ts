/**
 * When a recurring scheduled message is posted again (docs/protocol.md §9.2): the recurrence types
 * the official SDK sends, computed in UTC (every workspace user's time zone is UTC). Each
 * occurrence is counted from the first one (the anchor), so a month with no 31st or a year with
 * no 29 February moves that one occurrence only, not every later one.
 */
import { invalidRequest } from '../../errors.js';
import { RECURRENCE_TYPES, type Recurrence, type RecurrenceType } from '../../model/workspace.js';
import type { Json } from '../../model/json.js';

const DAY_MS = 86_400_000;
const MAX_TIME = 4_000_000_000_000;

/** `v` when it is a whole number from 0 to `max`, 0 when it is absent (or null); else undefined. */
const wholeOr0 = (v: Json | undefined, max: number): number | undefined =>
  v === undefined || v === null
    ? 0
    : typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max
      ? v
      : undefined;

/**
 * V1.ScheduledMessageRecurrenceRequest → a Recurrence; a bad field is 400 naming it, in the words of this
 * service (the route's schema leaves the recurrence to it).
 */
export function parseRecurrence(raw: Json | undefined, sendAt: number): Recurrence | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw invalidRequest('recurrence must be an object.', [{ pointer: '/recurrence', message: 'must be an object' }]);
  const recurrenceType = RECURRENCE_TYPES.find((t) => t === raw.recurrenceType);
  if (recurrenceType === undefined)
    throw invalidRequest(`recurrence.recurrenceType must be one of ${RECURRENCE_TYPES.join(', ')}.`, [
      { pointer: '/recurrence/recurrenceType', message: 'unknown recurrence type' },
    ]);
  const endAfterOccurrences = wholeOr0(raw.endAfterOccurrences, 9999);
  if (endAfterOccurrences === undefined)
    throw invalidRequest('recurrence.endAfterOccurrences must be a whole number from 0 to 9999.', [
      { pointer: '/recurrence/endAfterOccurrences', message: 'must be 0 to 9999' },
    ]);
  const endDate = wholeOr0(raw.endDate, MAX_TIME);
  if (endDate === undefined)
    throw invalidRequest('recurrence.endDate must be a time in epoch milliseconds.', [
      { pointer: '/recurrence/endDate', message: 'must be epoch milliseconds' },
    ]);
  if (endDate !== 0 && endDate < sendAt)
    throw invalidRequest('recurrence.endDate is before sendAt: the message would never be posted.', [
      { pointer: '/recurrence/endDate', message: 'is before sendAt' },
    ]);
  return { recurrenceType, endAfterOccurrences, endDate };
}

/**
 * The same time of day as `anchor`, on day `day` (1-based) of month `month` (may overflow into later years) of `year`.
 */
const on = (anchor: Date, year: number, month: number, day: number) =>
  Date.UTC(
    year,
    month,
    day,
    anchor.getUTCHours(),
    anchor.getUTCMinutes(),
    anchor.getUTCSeconds(),
    anchor.getUTCMilliseconds(),
  );
const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month + 1, 0)).getUTCDate();

/**
 * The anchor's weekday in month `month` (of the anchor's year, may overflow): the nth one (the last when there are
 * fewer), or the last.
 */
function weekdayIn(anchor: Date, month: number, nth: number | 'last'): number {
  const year = anchor.getUTCFullYear();
  const first = new Date(Date.UTC(year, month, 1));
  const firstDay = 1 + ((anchor.getUTCDay() - first.getUTCDay() + 7) % 7);
  const days = daysIn(first.getUTCFullYear(), first.getUTCMonth());
  const count = Math.floor((days - firstDay) / 7) + 1;
  const n = nth === 'last' ? count : Math.min(nth, count);
  return on(anchor, year, month, firstDay + (n - 1) * 7);
}

/**
 * The time of occurrence `k` (1 = the one after the anchor) of a recurrence that started at
 * `anchorAt`; `previous` is occurrence k-1 (business days count on from it).
 */
export function occurrenceAt(type: RecurrenceType, anchorAt: number, k: number, previous: number): number {
  const a = new Date(anchorAt);
  const month = a.getUTCMonth();
  const nth = Math.ceil(a.getUTCDate() / 7);
  switch (type) {
    case 'DAILY':
      return anchorAt + k * DAY_MS;
    case 'BUSINESSDAYS': {
      let t = previous + DAY_MS;
      while ([0, 6].includes(new Date(t).getUTCDay())) t += DAY_MS;
      return t;
    }
    case 'WEEKLY':
      return anchorAt + 7 * k * DAY_MS;
    case 'BIWEEKLY':
      return anchorAt + 14 * k * DAY_MS;
    case 'MONTHLY_NTH_WEEKDAY':
      return weekdayIn(a, month + k, nth);
    case 'MONTHLY_LAST_WEEKDAY':
      return weekdayIn(a, month + k, 'last');
    case 'QUARTERLY_NTH_WEEKDAY':
      return weekdayIn(a, month + 3 * k, nth);
    case 'QUARTERLY_LAST_WEEKDAY':
      return weekdayIn(a, month + 3 * k, 'last');
    case 'ANNUALLY': {
      const year = a.getUTCFullYear() + k;
      return on(a, year, month, Math.min(a.getUTCDate(), daysIn(year, month)));
    }
  }
}

/**
 * After occurrence `posted` (1 = the first) at `postedAt`: when to post next, or undefined when the recurrence has
 * ended.
 */
export function nextOccurrence(r: Recurrence, anchorAt: number, posted: number, postedAt: number): number | undefined {
  if (r.endAfterOccurrences > 0 && posted >= r.endAfterOccurrences) return undefined;
  const next = occurrenceAt(r.recurrenceType, anchorAt, posted, postedAt);
  if (r.endDate > 0 && next > r.endDate) return undefined;
  return next > MAX_TIME ? undefined : next;
}
