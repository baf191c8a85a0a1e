/**
 * appreg's version: package.json's, read once as a file (this module runs as <root>/dist/src/version.js), so the CLI's
 * `--version`, the daemon's data directory stamp and the log all say the same.
 */
import fs from 'node:fs';
import { fieldOf, stringOr } from './unknown-values.js';

function packageVersion(): string {
  try {
    const pkg: unknown = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    return stringOr(fieldOf(pkg, 'version')) ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export const APPREG_VERSION = packageVersion();
