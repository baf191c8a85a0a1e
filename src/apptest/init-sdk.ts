/**
 * `appreg test --init` for an app on the platform's official Node SDK (docs/testing.md, "A starter suite"). Such an
 * app's manifest file is partial: the SDK fills in its slash commands, shortcuts, events, menus and redirect URLs from
 * the app's code when it starts, and serves the whole manifest at GET /manifest (its URLs made absolute on ADDON_HOST).
 * So the app is started as a run starts it (its command, with every variable the SDK reads), with placeholder
 * credentials and no daemon (it is asked for its manifest, nothing else), and its /manifest is read.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { appSide, daemonSide } from '../client/sdk-env.js';
import { freePort, startAppProcess, waitReady } from './app-process.js';
import { isRecord, recordOr } from '../unknown-values.js';

/** The official SDK's package, as an app's package.json depends on it. */
export const SDK_PACKAGE = 'pumble-sdk';
/** Where the SDK serves the manifest (a path it does not let an app change). */
export const SDK_MANIFEST_PATH = '/manifest';
/**
 * The origin the manifest read is asked to put in its URLs: the SDK's own default port on this machine. A run points
 * every URL on this machine at the port it gives the app, so the file written does not depend on the port used here.
 */
const MANIFEST_HOST = 'http://localhost:5000';

/** Whether the project in `dir` is on the official SDK: its package.json depends on it. */
export function usesSdk(dir: string): boolean {
  try {
    const pkg = recordOr(JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')));
    return ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies'].some((k) => {
      const deps = pkg?.[k];
      return deps !== null && typeof deps === 'object' && SDK_PACKAGE in deps;
    });
  } catch {
    return false;
  }
}

export type ServedManifest =
  | { ok: true; manifest: Record<string, unknown>; readyMs: number }
  | { ok: false; problem: string; appOutput: string[] };

/** The largest manifest read from an app. */
const MAX_BYTES = 1024 * 1024;

/**
 * Start the app (`command` in `cwd`, from the manifest file `manifestFile`), wait until its /manifest answers 200,
 * read it and stop the app. The manifest comes back without the SDK's `id` (here a placeholder).
 */
export async function manifestFromApp(o: {
  command: string;
  cwd: string;
  manifestFile: string;
  env: Record<string, string | undefined>;
  timeoutMs: number;
}): Promise<ServedManifest> {
  const port = await freePort();
  // nothing listens at the API: an app asked for its manifest has no reason to call it
  const settings = {
    ...daemonSide('http://127.0.0.1:9', {
      id: 'appreg-init',
      appKey: 'appreg-init-placeholder',
      clientSecret: 'appreg-init-placeholder',
      signingSecret: 'appreg-init-placeholder',
    }),
    ...appSide({ host: MANIFEST_HOST, port, manifestPath: o.manifestFile }),
    PORT: String(port),
  };
  const base = Object.fromEntries(Object.entries(o.env).filter((e): e is [string, string] => e[1] !== undefined));
  const proc = startAppProcess({ command: o.command, cwd: o.cwd, env: { ...base, ...settings }, stopTimeoutMs: 5000 });
  try {
    const t0 = Date.now();
    const appUrl = `http://127.0.0.1:${port}`;
    const notReady = await waitReady(proc, {
      ready: { url: SDK_MANIFEST_PATH, status: 200, timeoutMs: o.timeoutMs },
      port,
      appUrl,
    });
    if (notReady) return { ok: false, problem: notReady, appOutput: proc.lines().slice(-20) };
    const readyMs = Date.now() - t0;
    const got = await getJson(`${appUrl}${SDK_MANIFEST_PATH}`);
    if (typeof got === 'string') return { ok: false, problem: got, appOutput: proc.lines().slice(-20) };
    const manifest = { ...got };
    delete manifest.id;
    return { ok: true, manifest, readyMs };
  } finally {
    await proc.stop();
  }
}

/** The JSON object a GET of `url` answers, or why there is none. */
function getJson(url: string): Promise<Record<string, unknown> | string> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BYTES) {
          res.destroy();
          resolve(`its ${SDK_MANIFEST_PATH} is larger than ${MAX_BYTES} bytes`);
        } else chunks.push(c);
      });
      res.on('end', () => {
        try {
          const v: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          resolve(isRecord(v) ? v : `its ${SDK_MANIFEST_PATH} is not a JSON object`);
        } catch {
          resolve(`its ${SDK_MANIFEST_PATH} is not JSON`);
        }
      });
    });
    req.once('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.once('error', (e) => resolve(`its ${SDK_MANIFEST_PATH} did not answer: ${e.message}`));
  });
}
