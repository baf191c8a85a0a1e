/** An app's secrets in a .env file, as `apps create --env-out` and `apps rotate-secrets --env-out` write them. */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { CliError, EXIT } from '../client/exit.js';
import type { Io } from '../client/io.js';
import { appSide, appSideOf, daemonSide, type AppSecrets } from '../client/sdk-env.js';
import { errnoOf, messageOf } from '../unknown-values.js';

/**
 * `--env-out <path>` and its older spelling `--env-file <path>`. Node 20 reads `--env-file` as its
 * own option when the command is started through it (`npx appreg … --env-file .env`), so
 * `--env-out` is the name to use; `--env-file` keeps working wherever it reaches appreg.
 */
export function envOutOptions(cmd: Command, what: string): Command {
  return cmd
    .option('--env-out <path>', `also write ${what} there (0600); other lines of an existing file are kept`)
    .option(
      '--env-file <path>',
      'the same as --env-out (with npx on Node 20, Node takes --env-file itself: use --env-out)',
    );
}

/** The file named by --env-out or --env-file; both naming different files is a usage error. */
export function envOutTarget(o: Record<string, unknown>): string | undefined {
  const out = o.envOut === undefined ? undefined : String(o.envOut);
  const file = o.envFile === undefined ? undefined : String(o.envFile);
  if (out !== undefined && file !== undefined && out !== file)
    throw new CliError(
      '--env-out and --env-file are one option and name different files here: give one of them',
      EXIT.usage,
    );
  return out ?? file;
}

/** What an env file is written from: the app's host (`--from-url`) and its manifest file (`--file`), when known. */
export interface EnvSource {
  hostUrl?: string;
  manifestFile?: string;
}

/**
 * Every variable the official SDK reads (src/client/sdk-env.ts), written 0600. The daemon's side (id, secrets, the
 * daemon's URLs) is always written; the app's side (PUMBLE_ADDON_PORT, ADDON_HOST, PUMBLE_ADDON_MANIFEST_PATH)
 * only where the file has none yet: an app's port and host are the developer's to choose. An existing file keeps
 * its other lines (an app's .env usually holds more than these): ours are replaced in place, or appended. Written
 * to a 0600 temporary file and renamed, so no other mode is ever seen.
 */
function writeEnvFile(
  io: Io,
  file: string,
  app: AppSecrets & Record<string, unknown>,
  apiUrl: string,
  from: EnvSource,
): void {
  const target = path.resolve(io.cwd, file);
  const values = daemonSide(apiUrl, app);
  const manifestPath =
    from.manifestFile === undefined ? undefined : relativeTo(target, path.resolve(io.cwd, from.manifestFile));
  const ifAbsent: Record<string, string> = appSide(
    appSideOf({ hostUrl: from.hostUrl, registration: app, manifestPath }),
  );
  let existing = '';
  try {
    existing = fs.readFileSync(target, 'utf8');
  } catch (e) {
    if (errnoOf(e) !== 'ENOENT') throw new CliError(`cannot read ${file}: ${messageOf(e)}`, EXIT.usage);
  }
  const done = new Set<string>();
  const lines = existing === '' ? [] : existing.replace(/\r?\n$/, '').split(/\r?\n/);
  const out = lines.map((line) => {
    const m = /^\s*(?:export\s+)?([A-Z_]+)\s*=/.exec(line);
    const key = m?.[1];
    if (key && key in ifAbsent) done.add(key); // the app's own choice: kept as it is
    if (!key || !(key in values)) return line;
    if (done.has(key)) return null; // a duplicate of a key already replaced
    done.add(key);
    return `${key}=${values[key]}`;
  });
  for (const [k, v] of Object.entries({ ...values, ...ifAbsent })) if (!done.has(k)) out.push(`${k}=${v}`);
  const tmp = `${target}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(tmp, out.filter((l) => l !== null).join('\n') + '\n', { mode: 0o600, flag: 'wx' });
    fs.chmodSync(tmp, 0o600);
    fs.renameSync(tmp, target);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw new CliError(`cannot write ${file}: ${messageOf(e)}`, EXIT.usage);
  }
}

/**
 * writeEnvFile, returning its error message instead of throwing: the secrets are printed even
 * when the file cannot be written, since they are shown only this once.
 */
export function tryWriteEnvFile(
  io: Io,
  file: string,
  app: AppSecrets & Record<string, unknown>,
  apiUrl: string,
  from: EnvSource = {},
): string | undefined {
  try {
    writeEnvFile(io, file, app, apiUrl, from);
    return undefined;
  } catch (e) {
    return messageOf(e);
  }
}

/**
 * The manifest file as the app reads it: relative to the env file's folder (where the app usually starts) when it is
 * inside it, else absolute.
 */
function relativeTo(envFile: string, manifest: string): string {
  const rel = path.relative(path.dirname(envFile), manifest);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : manifest;
}
