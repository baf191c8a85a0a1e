#!/usr/bin/env node
// `npm pack` / `npm publish` (package.json's "prepack"): compiles src/ alone into dist/src/ from scratch, with no
// source maps (the package ships no TypeScript), so the package holds exactly the code of the tree being packed —
// nothing left in dist/ by an older build of a file since removed. package.json's "files" then takes dist/src's
// JavaScript, bin/, schemas/, public/, the examples, docs/ and CHANGELOG.md, and nothing else.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
fs.rmSync(path.join(root, 'dist', 'src'), { recursive: true, force: true });
// the dev build's incremental state (tsconfig.json) described the dist/src just removed: the next one compiles afresh
fs.rmSync(path.join(root, 'dist', '.tsbuildinfo'), { force: true });
const r = spawnSync(
  process.execPath,
  [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
  {
    cwd: root,
    stdio: 'inherit',
  },
);
if (r.status !== 0) {
  console.error(`build-package: tsc failed (exit ${r.status ?? r.signal})`);
  process.exit(r.status ?? 1);
}
