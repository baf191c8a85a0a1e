/**
 * Store<TestTables> write benchmark: the journaled embedded store against a naive
 * "change the lowdb document, await db.write()" loop, on a store holding
 * 10,000 records of ~1 KB. Prints a JSON result and writes it to
 * bench/results/store-write.json. Run: tsc, then node dist/bench/store-write.js
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Low } from 'lowdb';
import { JSONFile } from 'lowdb/node';
import { openEmbeddedStore, type EmbeddedStore } from '../src/store/embedded-store.js';
import type { TestTables } from '../test/helpers/test-tables.js';

const RECORDS = 10_000;
const PAD = 'x'.repeat(900);
const record = (i: number, v: number) => ({
  id: `app-${i}`,
  name: `App number ${i}`,
  version: v,
  updatedAt: new Date(1_700_000_000_000 + v).toISOString(),
  pad: PAD,
});

function projectRoot(): string {
  let d = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(d, 'package.json'))) {
    const up = path.dirname(d);
    if (up === d) throw new Error('package.json not found');
    d = up;
  }
  return d;
}

function summarize(latencies: number[], wallMs: number) {
  const s = [...latencies].sort((a, b) => a - b);
  // NaN for an empty run (no latencies to report)
  const pct = (p: number) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return {
    changes: s.length,
    wallMs: r(wallMs),
    perSecond: Math.round((s.length / wallMs) * 1000),
    p50Ms: r(pct(50)),
    p99Ms: r(pct(99)),
    maxMs: r(s.at(-1) ?? NaN),
  };
}

/** `concurrency` workers each run `perWorker` sequential operations. */
async function run(concurrency: number, perWorker: number, op: (n: number) => Promise<void>) {
  const latencies: number[] = [];
  let n = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = 0; i < perWorker; i++) {
        const k = n++;
        const s = performance.now();
        await op(k);
        latencies.push(performance.now() - s);
      }
    }),
  );
  return summarize(latencies, performance.now() - t0);
}

const rand = (n: number) => Math.floor(Math.random() * n);

async function benchStore(root: string, fsync: boolean) {
  const dir = fs.mkdtempSync(path.join(root, 'store-'));
  const store: EmbeddedStore<TestTables> = await openEmbeddedStore<TestTables>({ dir, fsync, compactIdleMs: 0 });
  for (let i = 0; i < RECORDS; i += 500) {
    const changes = [];
    for (let j = i; j < i + 500; j++) changes.push({ table: 'apps', id: `app-${j}`, value: record(j, 0) });
    await store.commit(changes);
  }
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  let t = performance.now();
  await store.compact();
  const snapshotMs = performance.now() - t;
  loop.disable();
  const eventLoopStallMs = Math.round(loop.max / 1e5) / 10; // the synchronous capture + JSON.stringify
  const snapshotBytes = fs.statSync(path.join(dir, 'appreg.json')).size;
  const before = store.stats();
  const update = (k: number) => {
    const i = rand(RECORDS);
    return store.commit([{ table: 'apps', id: `app-${i}`, value: record(i, k + 1) }]);
  };
  const c1 = await run(1, fsync ? 400 : 2000, update);
  const mid = store.stats();
  const c50 = await run(50, 60, update);
  const after = store.stats();
  t = performance.now();
  await store.close();
  const closeMs = performance.now() - t;
  fs.rmSync(dir, { recursive: true, force: true });
  return {
    fsync,
    snapshot: { ms: Math.round(snapshotMs * 10) / 10, bytes: snapshotBytes, eventLoopStallMs },
    concurrency1: { ...c1, batches: mid.batches - before.batches },
    concurrency50: { ...c50, batches: after.batches - mid.batches },
    compactionsDuringRuns: after.compactions - before.compactions,
    closeMs: Math.round(closeMs * 10) / 10,
  };
}

async function benchNaive(root: string) {
  const dir = fs.mkdtempSync(path.join(root, 'naive-'));
  type Doc = { apps: Record<string, object> };
  const db = new Low<Doc>(new JSONFile<Doc>(path.join(dir, 'db.json')), { apps: {} });
  for (let i = 0; i < RECORDS; i++) db.data.apps[`app-${i}`] = record(i, 0);
  let t = performance.now();
  await db.write();
  const fullWriteMs = performance.now() - t;
  const update = async (k: number) => {
    const i = rand(RECORDS);
    db.data.apps[`app-${i}`] = record(i, k + 1);
    await db.write();
  };
  const c1 = await run(1, 60, update);
  // concurrent db.write() calls are coalesced by steno (only the latest data is written)
  const c50 = await run(50, 4, update);
  fs.rmSync(dir, { recursive: true, force: true });
  return {
    note: 'lowdb db.write() per change: whole document rewritten (temp + rename), no fsync',
    fullWriteMs: Math.round(fullWriteMs * 10) / 10,
    concurrency1: c1,
    concurrency50: c50,
  };
}

const started = performance.now();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-'));
try {
  const result = {
    benchmark: 'store-write',
    date: new Date().toISOString(),
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpus: os.cpus().length,
    tmpdir: os.tmpdir(),
    records: RECORDS,
    recordBytes: JSON.stringify(record(0, 0)).length,
    journaledStore: await benchStore(tmp, true),
    journaledStoreNoFsync: await benchStore(tmp, false),
    naiveLowdb: await benchNaive(tmp),
    totalSeconds: 0,
  };
  result.totalSeconds = Math.round(performance.now() - started) / 1000;
  const json = JSON.stringify(result, null, 2);
  console.log(json);
  const out = path.join(projectRoot(), 'bench', 'results', 'store-write.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, json + '\n');
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
