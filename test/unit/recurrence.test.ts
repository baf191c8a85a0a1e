/**
 * Recurring scheduled messages (src/services/workspace/recurrence.ts): each recurrence type the SDK sends, its ends,
 * its checks.
 */
import t from 'tap';
import { nextOccurrence, occurrenceAt, parseRecurrence } from '../../src/services/workspace/recurrence.js';
import { RECURRENCE_TYPES, type RecurrenceType } from '../../src/model/workspace.js';
import { must } from '../../src/must.js';
import type { Json } from '../../src/model/json.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

/** The first `n` occurrences after the anchor. */
function series(type: RecurrenceType, anchor: string, n: number): string[] {
  const out: string[] = [];
  let prev = at(anchor);
  for (let k = 1; k <= n; k++) {
    prev = occurrenceAt(type, at(anchor), k, prev);
    out.push(must(iso(prev)));
  }
  return out;
}

t.test('every recurrence type, from Friday 30 January 2026 09:15 UTC (the fifth Friday)', async (t) => {
  const a = '2026-01-30T09:15:00.000Z';
  t.same(series('DAILY', a, 2), ['2026-01-31T09:15:00.000Z', '2026-02-01T09:15:00.000Z']);
  t.same(
    series('BUSINESSDAYS', a, 2),
    ['2026-02-02T09:15:00.000Z', '2026-02-03T09:15:00.000Z'],
    'Saturday and Sunday skipped',
  );
  t.same(series('WEEKLY', a, 2), ['2026-02-06T09:15:00.000Z', '2026-02-13T09:15:00.000Z']);
  t.same(series('BIWEEKLY', a, 2), ['2026-02-13T09:15:00.000Z', '2026-02-27T09:15:00.000Z']);
  // February 2026 has four Fridays: the fifth becomes the last; May has five again
  t.same(series('MONTHLY_NTH_WEEKDAY', a, 4), [
    '2026-02-27T09:15:00.000Z',
    '2026-03-27T09:15:00.000Z',
    '2026-04-24T09:15:00.000Z',
    '2026-05-29T09:15:00.000Z',
  ]);
  t.same(series('MONTHLY_LAST_WEEKDAY', a, 2), ['2026-02-27T09:15:00.000Z', '2026-03-27T09:15:00.000Z']);
  t.same(series('QUARTERLY_NTH_WEEKDAY', a, 2), ['2026-04-24T09:15:00.000Z', '2026-07-31T09:15:00.000Z']);
  t.same(series('QUARTERLY_LAST_WEEKDAY', a, 2), ['2026-04-24T09:15:00.000Z', '2026-07-31T09:15:00.000Z']);
  t.same(series('ANNUALLY', a, 1), ['2027-01-30T09:15:00.000Z']);
});

t.test(
  'the nth weekday is counted from the anchor: the second Tuesday stays the second Tuesday, across the year',
  async (t) => {
    t.same(series('MONTHLY_NTH_WEEKDAY', '2026-11-10T08:00:00.000Z', 3), [
      '2026-12-08T08:00:00.000Z',
      '2027-01-12T08:00:00.000Z',
      '2027-02-09T08:00:00.000Z',
    ]);
    t.same(
      series('ANNUALLY', '2028-02-29T12:00:00.000Z', 4),
      ['2029-02-28T12:00:00.000Z', '2030-02-28T12:00:00.000Z', '2031-02-28T12:00:00.000Z', '2032-02-29T12:00:00.000Z'],
      'a missing 29 February moves that year only',
    );
  },
);

t.test('ends: after n occurrences, or past the end date', async (t) => {
  const a = at('2026-03-02T10:00:00.000Z');
  const twice = { recurrenceType: 'DAILY' as const, endAfterOccurrences: 2, endDate: 0 };
  t.equal(iso(nextOccurrence(twice, a, 1, a)), '2026-03-03T10:00:00.000Z', 'after the first, a second');
  t.equal(nextOccurrence(twice, a, 2, a + 86_400_000), undefined, 'after the second, none');
  const until = { recurrenceType: 'WEEKLY' as const, endAfterOccurrences: 0, endDate: at('2026-03-10T00:00:00.000Z') };
  t.equal(iso(nextOccurrence(until, a, 1, a)), '2026-03-09T10:00:00.000Z');
  t.equal(nextOccurrence(until, a, 2, at('2026-03-09T10:00:00.000Z')), undefined, 'the 16th is past the end date');
  t.equal(
    iso(nextOccurrence({ recurrenceType: 'DAILY', endAfterOccurrences: 0, endDate: 0 }, a, 500, a)),
    '2027-07-15T10:00:00.000Z',
    'no end: it goes on',
  );
});

t.test('the request is checked field by field, as the SDK sends it', async (t) => {
  const sendAt = at('2026-03-02T10:00:00.000Z');
  t.equal(parseRecurrence(undefined, sendAt), undefined);
  t.same(parseRecurrence({ recurrenceType: 'WEEKLY' }, sendAt), {
    recurrenceType: 'WEEKLY',
    endAfterOccurrences: 0,
    endDate: 0,
  });
  for (const type of RECURRENCE_TYPES)
    t.equal(must(parseRecurrence({ recurrenceType: type, endAfterOccurrences: 3 }, sendAt)).recurrenceType, type);
  const refused: Array<[Json, string]> = [
    [{ recurrenceType: 'HOURLY' }, '/recurrence/recurrenceType'],
    [{ recurrenceType: 'DAILY', endAfterOccurrences: -1 }, '/recurrence/endAfterOccurrences'],
    [{ recurrenceType: 'DAILY', endAfterOccurrences: 10_000 }, '/recurrence/endAfterOccurrences'],
    [{ recurrenceType: 'DAILY', endDate: '2026-04-01' }, '/recurrence/endDate'],
    [{ recurrenceType: 'DAILY', endDate: sendAt - 1 }, '/recurrence/endDate'],
    ['DAILY', '/recurrence'],
  ];
  for (const [body, pointer] of refused)
    t.throws(() => parseRecurrence(body, sendAt), { code: 'invalid_request', details: [{ pointer }] }, pointer);
});
