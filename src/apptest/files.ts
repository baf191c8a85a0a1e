/**
 * Which files a run reads: the files given, and in each folder given every *.apptest.json, *.apptest.yaml and
 * *.apptest.yml (node_modules and hidden folders left out).
 */
import fs from 'node:fs';
import path from 'node:path';

const SUITE_FILE = /\.apptest\.(json|ya?ml)$/i;

export class NoSuchPath extends Error {}

function walk(dir: string, out: string[]): void {
  for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (e.name.startsWith('.') || e.name === 'node_modules') continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.isFile() && SUITE_FILE.test(e.name)) out.push(p);
  }
}

/** The suite files of `paths` (relative to `cwd`; none: `cwd` itself), each once, in the order given. */
export function suiteFiles(cwd: string, paths: string[]): string[] {
  const out: string[] = [];
  for (const given of paths.length ? paths : ['.']) {
    const p = path.resolve(cwd, given);
    let st: fs.Stats;
    try {
      st = fs.statSync(p);
    } catch {
      throw new NoSuchPath(`${given}: no such file or folder`);
    }
    if (st.isDirectory()) walk(p, out);
    else out.push(p);
  }
  return [...new Set(out)];
}
