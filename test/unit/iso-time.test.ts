import t from 'tap';
import { isoTime } from '../../src/iso-time.js';

t.test('isoTime gives the text toISOString gives', async (t) => {
  const times = [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 59_999, 60_000, 951_782_400_000, 1_764_331_200_123];
  // every millisecond of a second boundary, in order and back again (the kept second changes both ways)
  for (let ms = 1_764_331_199_990; ms <= 1_764_331_200_010; ms++) times.push(ms);
  for (let ms = 1_764_331_200_010; ms >= 1_764_331_199_990; ms--) times.push(ms);
  // random times over the four-digit years, twice each (the second kept, then not)
  let seed = 7;
  const next = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
  for (let i = 0; i < 5000; i++) {
    const ms = Math.floor(next() * 253402300799999);
    times.push(ms, ms, ms + Math.floor(next() * 1000));
  }
  times.push(253402300799999, 253402300800000, -1, -62198755200000, 1.5, 8.64e15);
  let wrong = 0;
  for (const ms of times) if (isoTime(ms) !== new Date(ms).toISOString()) wrong++;
  t.equal(wrong, 0, `${times.length} times`);
  t.equal(isoTime(1_764_331_200_007), '2025-11-28T12:00:00.007Z');
  t.throws(() => isoTime(NaN), RangeError, 'an invalid time throws as toISOString does');
});
