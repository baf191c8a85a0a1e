/**
 * The console's first load against a daemon holding 1,000 apps and 10,000 deliveries: in headless Chromium with the
 * cache off, the bytes transferred for a page (HTML + script + the inline CSS) and its first contentful and largest
 * contentful paint, from the browser's own performance timing. Pages: / (the apps list), the delivery inspector,
 * and a delivery's page. Budget: < 150 KB and < 500 ms. Result in bench/results/console.json.
 *   npm run build && node dist/bench/console.js   (about a minute; needs /usr/bin/chromium)
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { Pool } from 'undici';
import { load, percentile, startDaemonProcess, writeResult } from './lib.js';
import { must } from '../src/must.js';

const APPS = Number(process.env.BENCH_CONSOLE_APPS ?? 1_000);
const DELIVERIES = Number(process.env.BENCH_CONSOLE_DELIVERIES ?? 10_000);
const LOADS = 7;
const BUDGET = { bytes: 150 * 1024, paintMs: 500 };
const CHROMIUM = process.env.APPREG_CHROMIUM ?? '/usr/bin/chromium';

interface Sample {
  bytes: number;
  fcp: number;
  lcp: number;
  domContentLoaded: number;
}

async function main() {
  process.env.APPREG_RATE_LIMIT_MANAGEMENT_WRITES = '0';
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const rxUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-console-'));
  const d = await startDaemonProcess(dir);
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  try {
    const creds = JSON.parse(fs.readFileSync(path.join(dir, 'credentials.json'), 'utf8')) as {
      workspaceId: string;
      workspaceUserId: string;
      authToken: string;
    };
    const base = `/workspaces/${creds.workspaceId}/workspaceUsers/${creds.workspaceUserId}`;
    const headers = { authtoken: creds.authToken, 'content-type': 'application/json' };
    const pool = new Pool(d.url, { connections: 50, pipelining: 1 });
    const ids: string[] = [];
    await load(
      async (i) => {
        const body = JSON.stringify({
          name: `bench-console-${i}`,
          displayName: `Bench Console App ${i}`,
          bot: true,
          botTitle: 'Benchmark bot',
          scopes: { botScopes: ['messages:read', 'messages:write'], userScopes: ['messages:read'] },
          shortcuts: [{ shortcutType: 'GLOBAL', url: `${rxUrl}/shortcut`, name: 'go', displayName: 'Go' }],
          slashCommands: [{ command: '/bench', url: `${rxUrl}/slash`, usageHint: '[text]' }],
          eventSubscriptions: { url: `${rxUrl}/events`, events: ['NEW_MESSAGE'] },
          redirectUrls: ['https://bench.example.com/redirect'],
        });
        const r = await pool.request({ method: 'POST', path: `${base}/apps`, headers, body });
        const b = (await r.body.json()) as { id: string };
        if (r.statusCode === 201) ids.push(b.id);
        return r.statusCode === 201;
      },
      { concurrency: 50, total: APPS },
    );
    let lastDelivery = '';
    const seeded = await load(
      async (i) => {
        const r = await pool.request({
          method: 'POST',
          path: `${base}/deliveries`,
          headers,
          body: JSON.stringify({ appId: ids[i % ids.length], kind: 'slash-command', command: '/bench', text: `n${i}` }),
        });
        const b = (await r.body.json()) as { id: string; state: string };
        lastDelivery = b.id;
        return r.statusCode === 201 && b.state === 'delivered';
      },
      { concurrency: 50, total: DELIVERIES },
    );
    console.error(`seeded ${ids.length} apps and ${seeded.requests - seeded.errors} deliveries`);
    await pool.close();

    const link = await fetch(`${d.url}${base}/web/sign-in-links`, { method: 'POST', headers, body: '{}' });
    const { url } = (await link.json()) as { url: string };
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const signIn = await context.newPage();
    await signIn.goto(url);
    await signIn.close();

    // the daemon idle again (the delivery log written, the seeding's garbage collected)
    await new Promise((r) => setTimeout(r, 3000));

    /** One load with the cache off: bytes on the wire (CDP's encodedDataLength) and the browser's paint timing. */
    async function measure(page: Page): Promise<Omit<Sample, 'bytes'>> {
      return page.evaluate(
        () =>
          new Promise<Omit<Sample, 'bytes'>>((resolve) => {
            new PerformanceObserver((list) => {
              const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
              const fcp =
                performance.getEntriesByName('first-contentful-paint')[0]?.startTime ??
                must(list.getEntries().at(-1)).startTime;
              resolve({
                fcp,
                lcp: must(list.getEntries().at(-1)).startTime,
                domContentLoaded: nav.domContentLoadedEventEnd,
              });
            }).observe({ type: 'largest-contentful-paint', buffered: true });
          }),
      );
    }
    async function instrumented(page: Page) {
      const cdp = await context.newCDPSession(page);
      await cdp.send('Network.enable');
      await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
      let bytes = 0;
      cdp.on('Network.loadingFinished', (e: { encodedDataLength: number }) => (bytes += e.encodedDataLength));
      return { take: () => ((bytes = 0), undefined), bytes: () => bytes };
    }
    /** A load in a new tab: what opening the console's link costs, a fresh renderer process included. */
    async function coldLoad(pathname: string): Promise<Sample> {
      const page = await context.newPage();
      const net = await instrumented(page);
      await page.goto(d.url + pathname, { waitUntil: 'load' });
      const s = await measure(page);
      const bytes = net.bytes();
      await page.close();
      return { ...s, bytes };
    }
    const tab = await context.newPage();
    const tabNet = await instrumented(tab);
    /** A load in a tab that is already open: the page's own cost. */
    async function warmLoad(pathname: string): Promise<Sample> {
      tabNet.take();
      await tab.goto(d.url + pathname, { waitUntil: 'load' });
      const s = await measure(tab);
      return { ...s, bytes: tabNet.bytes() };
    }

    const pages: Record<string, string> = {
      apps: '/',
      deliveries: '/console/deliveries',
      delivery: `/console/deliveries/${lastDelivery}`,
    };
    const result: Record<string, unknown> = {};
    let withinBudget = true;
    const summary = (samples: Sample[]) => {
      const med = (k: keyof Sample) =>
        Math.round(
          percentile(
            samples.map((s) => s[k]).sort((a, b) => a - b),
            50,
          ) * 10,
        ) / 10;
      const max = (k: keyof Sample) => Math.round(Math.max(...samples.map((s) => s[k])) * 10) / 10;
      return {
        bytes: max('bytes'),
        fcpMsMedian: med('fcp'),
        fcpMsMax: max('fcp'),
        lcpMsMedian: med('lcp'),
        lcpMsMax: max('lcp'),
        domContentLoadedMsMedian: med('domContentLoaded'),
      };
    };
    for (const [name, p] of Object.entries(pages)) {
      await coldLoad(p); // warm-up (the daemon's JIT)
      const cold: Sample[] = [];
      const warm: Sample[] = [];
      for (let i = 0; i < LOADS; i++) cold.push(await coldLoad(p));
      for (let i = 0; i < LOADS; i++) warm.push(await warmLoad(p));
      const r = {
        path: p === pages.delivery ? '/console/deliveries/:id' : p,
        newTab: summary(cold),
        openTab: summary(warm),
      };
      // the budget: under 150 KB, and the median first paint of a new tab under 500 ms
      withinBudget &&= r.newTab.bytes < BUDGET.bytes && r.newTab.lcpMsMedian < BUDGET.paintMs;
      result[name] = r;
    }
    writeResult('console', {
      what: `first load of console pages in headless Chromium, cache off, against a daemon holding ${ids.length} apps and ${DELIVERIES} deliveries: ${LOADS} loads each in a new tab (a fresh renderer process, as when appreg open's link is opened) and ${LOADS} in a tab already open; bytes = every response's encodedDataLength (headers + body); paint = first and largest contentful paint from navigation start. Budget: bytes < 150 KB and the new tab's median paint < 500 ms`,
      date: new Date().toISOString(),
      node: process.version,
      cores: os.cpus().length,
      budget: { bytes: BUDGET.bytes, paintMs: BUDGET.paintMs },
      pages: result,
      withinBudget,
    });
    if (!withinBudget) process.exitCode = 1;
  } finally {
    await browser.close();
    await d.stop();
    receiver.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
