#!/usr/bin/env node
// Test entry point (npm test): compile src and tests with tsc, run the emitted
// JavaScript under tap, then print the closing line CI reads: "N passed, N failed".
// tap's own exit code is kept.
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import fs from 'node:fs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const tsc = spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
if (tsc.status !== 0) {
  console.log('0 passed, 1 failed');
  process.exit(tsc.status ?? 1);
}
// The compiled tests live in dist/ (git-ignored, which tap's own file search skips): list them here.
function testFiles(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? testFiles(p) : e.name.endsWith('.test.js') ? [path.relative(root, p)] : [];
  });
}
const given = process.argv.slice(2);
// only tests whose TypeScript source still exists (a deleted test may linger in dist/)
const hasSource = (f) => fs.existsSync(path.join(root, f.replace(/^dist[\\/]/, '').replace(/\.js$/, '.ts')));
const files = given.length ? given : testFiles(path.join(root, 'dist/test')).filter(hasSource).sort();
const args = [path.join(root, 'node_modules/tap/dist/esm/run.mjs'), ...files];
const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env } });
let tail = '';
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  tail = (tail + chunk.toString()).slice(-4000);
});
child.on('close', (code) => {
  // tap's summary: "# { total: 12, pass: 11, fail: 1 }" (fields may vary)
  const m = /#\s*\{([^}]*)\}\s*$/m.exec(tail.replace(/\u001b\[[0-9;]*m/g, ''));
  let pass = 0, fail = 0;
  if (m) {
    const pick = (k) => Number((new RegExp(`\\b${k}:\\s*(\\d+)`).exec(m[1]) || [])[1] || 0);
    pass = pick('pass');
    fail = pick('fail');
  } else if (code !== 0) {
    fail = 1;
  }
  console.log(`${pass} passed, ${fail} failed`);
  process.exit(code ?? 1);
});
