/**
 * A browser for a console test: Chromium launched headless with CHROMIUM_ARGS (closed at the
 * test's teardown), a context and a page 1280×900, and the errors the page's console logged (a CSP
 * violation is one), for the test to check at its end.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CHROMIUM_ARGS } from './chromium.js';

export async function openBrowser(
  t: Tap.Test,
  executablePath: string,
): Promise<{ browser: Browser; context: BrowserContext; page: Page; consoleErrors: string[] }> {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS, headless: true });
  t.teardown(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const consoleErrors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  return { browser, context, page, consoleErrors };
}
