/**
 * Embedded store memory: the token benchmark's data set (10,000 apps with a manifest and sealed
 * secrets, 110,000 tokens, 200,000 pending codes, installations and authorizations, ~430,000
 * records) built straight into an embedded store in a temp dir, then opened in a FRESH child process
 * that measures RSS after open (after a gc), and the peak RSS while it makes 20,000
 * exchange-like commits (consume a code, issue a token) and a forced compaction: sampled every
 * 20 ms, and the kernel's high-water mark (VmHWM) at the end, which also sees synchronous stalls.
 * Also times a get of a ~3 KB app record, and measures an open after a crash that left the
 * whole data set in the journal (replay). Writes bench/results/store-memory.json.
 * Run: tsc, then node dist/bench/store-memory.js   (BENCH_APPS to shrink)
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { openEmbeddedStore } from '../src/store/embedded-store.js';
import type { Change } from '../src/store/types.js';
import type { TestTables } from '../test/helpers/test-tables.js';
import { must } from '../src/must.js';

const APPS = Number(process.env.BENCH_APPS ?? 10_000);
const USERS = 10;
const CODES = APPS * 20;
const COMMITS = 20_000;
const TARGETS = { rssAfterOpenMB: 400, peakRssMB: 600 };
const WS = 'ws_bench';
const REDIRECT = 'https://bench.example.com/cb';
const ISO = new Date(1_790_000_000_000).toISOString();

const hex = (n: number) => crypto.randomBytes(n).toString('hex');
/** What sealing {clientSecret, appKey, signingSecret} (AES-256-GCM, base64url) yields: ~250 bytes. */
const sealed = (plainBytes: number) =>
  `v1.${crypto.randomBytes(12).toString('base64url')}.${crypto.randomBytes(plainBytes + 16).toString('base64url')}`;

function manifest(i: number) {
  const cmd = (k: number) => ({
    command: `/bench${k}`,
    description: `Runs benchmark step ${k} for app ${i}`,
    usageHint: '[what] [when]',
    url: `https://bench.example.com/cmd/${k}`,
  });
  const sc = (k: number) => ({
    name: `Shortcut ${k}`,
    callbackId: `shortcut_${k}`,
    description: `Quick action ${k} of bench app ${i}`,
    type: k % 2 ? 'message' : 'global',
  });
  return {
    name: `bench-app-${i}`,
    displayName: `Bench App ${i}`,
    description: `A benchmark app (number ${i}) that reads and writes messages.`,
    longDescription: 'This app exists to load the registry the way a real directory of apps does. '.repeat(6),
    bot: true,
    botTitle: 'Benchmark bot',
    homepageUrl: `https://bench.example.com/apps/${i}`,
    scopes: {
      botScopes: ['messages:read', 'messages:write', 'channels:read', 'users:read'],
      userScopes: ['messages:read'],
    },
    shortcuts: [sc(1), sc(2), sc(3)],
    slashCommands: [cmd(1), cmd(2), cmd(3), cmd(4)],
    eventSubscriptions: {
      url: 'https://bench.example.com/events',
      events: ['NEW_MESSAGE', 'MESSAGE_EDITED', 'APP_MENTION', 'MEMBER_JOINED'],
    },
    interactivity: { url: 'https://bench.example.com/interact', optionsLoadUrl: 'https://bench.example.com/options' },
    redirectUrls: [REDIRECT, `https://bench.example.com/cb/${i}`],
    offlineMessage: 'offline',
  };
}

const appId = (i: number) => `app_${String(i).padStart(8, '0')}${hex(4)}`;
const userId = (u: number) => `wu_bench${u}`;

function codeRecord(app: string, u: number) {
  return {
    id: hex(32),
    appId: app,
    workspaceId: WS,
    workspaceUserId: userId(u),
    userScopes: ['messages:read'],
    botScopes: ['messages:read', 'messages:write'],
    redirectUrl: REDIRECT,
    reinstall: false,
    expiresAt: 1_790_000_600_000,
    createdAt: ISO,
  };
}
function tokenRecord(app: string, u: number | 'bot') {
  return {
    id: hex(32),
    kind: u === 'bot' ? 'bot' : 'user',
    appId: app,
    workspaceId: WS,
    workspaceUserId: u === 'bot' ? `wu_bot_${app}` : userId(u),
    scopes: u === 'bot' ? ['messages:read', 'messages:write'] : ['messages:read'],
    createdAt: ISO,
  };
}

/** Build the data set into `dir` (fsync off while seeding); returns the app and code ids the child uses. */
async function build(
  dir: string,
  crashCopy: string,
): Promise<{ apps: string[]; codes: string[]; records: number; dataFileBytes: number; journalBytes: number }> {
  // No compaction while seeding: the crash copy taken before close holds everything in its journal.
  const store = await openEmbeddedStore<TestTables>({
    dir,
    fsync: false,
    compactIdleMs: 0,
    compactEveryBytes: Number.MAX_SAFE_INTEGER,
  });
  let batch: Change<TestTables>[] = [];
  let records = 0;
  const put = async (table: string, id: string, value: object) => {
    batch.push({ table, id, value });
    records++;
    if (batch.length >= 1000) await flush();
  };
  const flush = async () => {
    const b = batch;
    batch = [];
    if (b.length) await store.commit(b);
  };
  for (let u = 0; u < USERS; u++)
    await put('workspaceUsers', userId(u), {
      id: userId(u),
      workspaceId: WS,
      accountId: `acc_bench${u}`,
      email: `bench${u}@example.com`,
      name: `Bench ${u}`,
      createdAt: ISO,
    });
  const apps: string[] = [];
  for (let i = 0; i < APPS; i++) {
    const id = appId(i);
    apps.push(id);
    await put('apps', id, {
      id,
      workspaceId: WS,
      ownerId: 'wu_owner',
      manifest: manifest(i),
      published: false,
      sealedSecrets: sealed(180),
      createdAt: ISO,
      updatedAt: ISO,
    });
    const tok = tokenRecord(id, 'bot');
    await put('oauthTokens', tok.id, tok);
    await put('oauthInstallations', `ins_${id}`, {
      id: `ins_${id}`,
      appId: id,
      workspaceId: WS,
      installedBy: userId(0),
      botUserId: `wu_bot_${id}`,
      botScopes: ['messages:read', 'messages:write'],
      sealedBotToken: sealed(60),
      botTokenId: tok.id,
      createdAt: ISO,
      updatedAt: ISO,
    });
    for (let u = 0; u < USERS; u++) {
      const t = tokenRecord(id, u);
      await put('oauthTokens', t.id, t);
      await put('oauthAuthorizations', `auz_${id}_${u}`, {
        id: `auz_${id}_${u}`,
        appId: id,
        workspaceId: WS,
        workspaceUserId: userId(u),
        userScopes: ['messages:read'],
        createdAt: ISO,
        updatedAt: ISO,
      });
    }
  }
  const codes: string[] = [];
  for (let k = 0; k < CODES; k++) {
    const c = codeRecord(must(apps[k % APPS]), k % USERS);
    codes.push(c.id);
    await put('oauthCodes', c.id, c);
  }
  await flush();
  const journalBytes = store.stats().journalBytes;
  fs.cpSync(dir, crashCopy, { recursive: true });
  await store.close();
  return { apps, codes, records, dataFileBytes: fs.statSync(path.join(dir, 'appreg.json')).size, journalBytes };
}

const mb = (b: number) => Math.round(b / 1024 / 1024);
const vm = (field: string) =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1] ?? NaN) *
  1024;
const gc = () => (globalThis as { gc?: () => void }).gc?.();

/** The child after a crash: open a directory whose data is all in the journal (replay), measure. */
async function journalChild(dir: string): Promise<void> {
  const t = performance.now();
  await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0 });
  const openMs = performance.now() - t;
  const peak = vm('VmHWM');
  gc();
  process.stdout.write(
    JSON.stringify({
      openMs: Math.round(openMs),
      rssAfterOpenMB: mb(process.memoryUsage().rss),
      peakDuringOpenMB: mb(peak),
    }),
  );
  process.exit(0); // no close: it would compact
}

/** The child: open, measure, commit, compact, measure. */
async function child(dir: string, idsFile: string): Promise<void> {
  const { apps, codes } = JSON.parse(fs.readFileSync(idsFile, 'utf8')) as { apps: string[]; codes: string[] };
  const rssBeforeOpen = process.memoryUsage().rss;
  let t = performance.now();
  const store = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0 });
  const openMs = performance.now() - t;
  const hwmAfterOpen = vm('VmHWM');
  gc();
  const afterOpen = process.memoryUsage();
  // get of a ~3 KB app record (a parse per get)
  const appBytes = JSON.stringify(await store.get('apps', must(apps[0]))).length;
  t = performance.now();
  const GETS = 20_000;
  for (let i = 0; i < GETS; i++) await store.get('apps', must(apps[(i * 7919) % apps.length]));
  const getUs = ((performance.now() - t) * 1000) / GETS;

  let peakSampled = 0;
  const sampler = setInterval(() => (peakSampled = Math.max(peakSampled, process.memoryUsage().rss)), 20);
  t = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (next < COMMITS) {
        const k = next++;
        const code = must(await store.get('oauthCodes', must(codes[k])));
        const tok = tokenRecord(code.appId as string, k % USERS);
        await store.commit([
          {
            table: 'oauthCodes',
            id: must(codes[k]),
            value: {
              id: codes[k],
              appId: code.appId,
              workspaceId: WS,
              expiresAt: code.expiresAt,
              consumedAt: ISO,
              issuedTokenIds: [tok.id],
            },
          },
          { table: 'oauthTokens', id: tok.id, value: tok },
        ]);
      }
    }),
  );
  const commitsMs = performance.now() - t;
  t = performance.now();
  await store.compact();
  const compactMs = performance.now() - t;
  clearInterval(sampler);
  peakSampled = Math.max(peakSampled, process.memoryUsage().rss);
  await store.close();
  const r = (x: number) => Math.round(x * 10) / 10;
  process.stdout.write(
    JSON.stringify({
      openMs: r(openMs),
      rssBeforeOpenMB: mb(rssBeforeOpen),
      rssAfterOpenMB: mb(afterOpen.rss),
      heapUsedAfterOpenMB: mb(afterOpen.heapUsed),
      // the record texts' slabs (src/store/text-arena.ts), outside the heap
      arrayBuffersAfterOpenMB: mb(afterOpen.arrayBuffers),
      peakDuringOpenMB: mb(hwmAfterOpen),
      peakSampledMB: mb(peakSampled),
      peakVmHWMMB: mb(vm('VmHWM')),
      appRecordBytes: appBytes,
      getAppUs: r(getUs),
      commits: COMMITS,
      commitsPerSecond: Math.round(COMMITS / (commitsMs / 1000)),
      compactMs: r(compactMs),
    }),
  );
}

function projectRoot(): string {
  let d = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(d, 'package.json'))) d = path.dirname(d);
  return d;
}

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-store-memory-'));
  try {
    const dir = path.join(tmp, 'data');
    let t = performance.now();
    const crashDir = path.join(tmp, 'crash');
    const built = await build(dir, crashDir);
    const buildSeconds = Math.round(performance.now() - t) / 1000;
    const idsFile = path.join(tmp, 'ids.json');
    fs.writeFileSync(idsFile, JSON.stringify({ apps: built.apps, codes: built.codes.slice(0, COMMITS) }));
    const runChild = (...args: string[]) =>
      new Promise<string>((resolve, reject) => {
        const p = spawn(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), ...args], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        let s = '';
        p.stdout.on('data', (d: Buffer) => (s += d.toString()));
        p.on('exit', (code) => (code === 0 ? resolve(s) : reject(new Error(`child exited ${code}`))));
      });
    const measured = JSON.parse(await runChild('child', dir, idsFile)) as {
      rssAfterOpenMB: number;
      peakVmHWMMB: number;
    };
    const afterCrash = JSON.parse(await runChild('journal', crashDir)) as object;
    const result = {
      benchmark: 'store-memory',
      date: new Date().toISOString(),
      node: process.version,
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      cpus: os.cpus().length,
      dataSet: { apps: APPS, users: USERS, records: built.records, dataFileMB: mb(built.dataFileBytes), buildSeconds },
      ...measured,
      openFromJournalAfterCrash: { journalMB: mb(built.journalBytes), ...afterCrash },
      targets: TARGETS,
      meetsTargets: measured.rssAfterOpenMB < TARGETS.rssAfterOpenMB && measured.peakVmHWMMB < TARGETS.peakRssMB,
    };
    const json = JSON.stringify(result, null, 2);
    console.log(json);
    const file = process.env.BENCH_OUT ?? path.join(projectRoot(), 'bench', 'results', 'store-memory.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, json + '\n');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'child') await child(must(process.argv[3]), must(process.argv[4]));
else if (process.argv[2] === 'journal') await journalChild(must(process.argv[3]));
else await main();
