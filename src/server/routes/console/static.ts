/**
 * The console's static files (public/console/: its one script), served as files: the type from the
 * name, `Cache-Control: no-cache` with an ETag so a browser revalidates and gets a 304 while the
 * file is unchanged, and nosniff. The console's CSP allows them by `script-src 'self'`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type RequestHandler } from 'express';

/** public/ of the package: found upwards from this module (it runs from dist/src/… or from src/…). */
function publicDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, 'public');
    if (fs.existsSync(path.join(candidate, 'console', 'console.js'))) return candidate;
    const up = path.dirname(dir);
    if (up === dir) throw new Error('public/console/console.js is missing from the installed package');
    dir = up;
  }
}

/**
 * The files under public/ by their path (routed for SCRIPT_PATH only: no index, no dotfiles, no directory redirect).
 */
export function consoleStaticFiles(): RequestHandler {
  return express.static(publicDir(), {
    index: false,
    dotfiles: 'ignore',
    redirect: false,
    lastModified: false,
    cacheControl: false,
    setHeaders: (res) => {
      res.setHeader('cache-control', 'no-cache');
      res.setHeader('x-content-type-options', 'nosniff');
    },
  });
}
