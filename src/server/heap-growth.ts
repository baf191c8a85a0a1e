/**
 * The daemon's heap growth. After each full collection V8 lets the old generation grow by a factor
 * it picks from how fast it collects, up to 4: a daemon holding 350 MB of records then collects at
 * about 1.4 GB. Requests that wait for their fsync live long enough for their garbage to reach the
 * old generation (some 4 KB per token exchange), so a busy daemon climbs to that factor. A smaller
 * factor (config heapGrowingPercent) collects sooner; it scales with the live data, so a bigger
 * data set still fits, unlike a fixed --max-old-space-size.
 */
import v8 from 'node:v8';

const FLAG = /^--heap[-_]growing[-_]percent(=|$)/;

/**
 * Set V8's heap growing factor to 1 + percent/100 (from now on), unless percent is 0 or node was
 * started with --heap-growing-percent itself (NODE_OPTIONS or its arguments: that choice wins).
 * Returns whether it set it.
 */
export function limitHeapGrowth(
  percent: number,
  from: { execArgv: readonly string[]; nodeOptions?: string; setFlags?: (flags: string) => void } = {
    execArgv: process.execArgv,
    nodeOptions: process.env.NODE_OPTIONS,
  },
): boolean {
  const p = Math.round(percent);
  if (!(p > 0)) return false;
  if ([...from.execArgv, ...(from.nodeOptions ?? '').split(/\s+/)].some((a) => FLAG.test(a))) return false;
  (from.setFlags ?? v8.setFlagsFromString)(`--heap-growing-percent=${p}`);
  return true;
}
