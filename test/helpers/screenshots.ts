/** Screenshots of the console's pages for people to look at, and the check that they fit a phone. */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';

/** Where the browser tests save them (dist/ is git-ignored). */
const SHOTS = path.resolve('dist/screenshots');

/** `shoot(page, name)`: the page at 1280 and 390 px wide, light and dark; asserts no sideways scrolling at 390 px. */
export function screenshotter(t: { ok(v: unknown, msg: string): void }) {
  fs.mkdirSync(SHOTS, { recursive: true });
  return async function shoot(p: Page, name: string): Promise<void> {
    for (const scheme of ['light', 'dark'] as const) {
      await p.emulateMedia({ colorScheme: scheme });
      for (const width of [1280, 390]) {
        await p.setViewportSize({ width, height: 900 });
        await p.screenshot({ path: path.join(SHOTS, `${name}-${width}-${scheme}.png`), fullPage: true });
        if (width === 390) {
          const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
          t.ok(overflow <= 0, `${name}: no sideways scrolling at 390 px (${scheme})`);
        }
      }
    }
    await p.emulateMedia({ colorScheme: 'light' });
    await p.setViewportSize({ width: 1280, height: 900 });
  };
}
