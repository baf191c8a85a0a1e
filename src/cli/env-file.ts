/** An app's secrets in a .env file, as `apps create --env-out` and `apps rotate-secrets --env-out` write them. */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { CliError, EXIT } from './output.js';
import type { Io } from './run.js';

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

interface AppSecrets {
  id: string;
  appKey?: unknown;
  clientSecret?: unknown;
  signingSecret?: unknown;
}

/**
 * PUMBLE_APP_* lines and PUMBLE_API_URL (the daemon the secrets belong to), the names the
 * official SDK reads, written 0600. An existing file keeps its
 * other lines (an app's .env usually holds more than these four): the four are replaced in
 * place, or appended. Written to a 0600 temporary file and renamed, so no other mode is ever seen.
 */
function writeEnvFile(io: Io, file: string, app: AppSecrets, apiUrl: string): void {
  const target = path.resolve(io.cwd, file);
  const values: Record<string, string> = {
    PUMBLE_APP_ID: app.id,
    PUMBLE_APP_KEY: String(app.appKey),
    PUMBLE_APP_CLIENT_SECRET: String(app.clientSecret),
    PUMBLE_APP_SIGNING_SECRET: String(app.signingSecret),
    PUMBLE_API_URL: apiUrl,
  };
  let existing = '';
  try {
    existing = fs.readFileSync(target, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new CliError(`cannot read ${file}: ${(e as Error).message}`, EXIT.usage);
  }
  const done = new Set<string>();
  const lines = existing === '' ? [] : existing.replace(/\r?\n$/, '').split(/\r?\n/);
  const out = lines.map((line) => {
    const m = /^\s*(?:export\s+)?([A-Z_]+)\s*=/.exec(line);
    const key = m?.[1];
    if (!key || !(key in values)) return line;
    if (done.has(key)) return null; // a duplicate of a key already replaced
    done.add(key);
    return `${key}=${values[key]}`;
  });
  for (const [k, v] of Object.entries(values)) if (!done.has(k)) out.push(`${k}=${v}`);
  const tmp = `${target}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(tmp, out.filter((l) => l !== null).join('\n') + '\n', { mode: 0o600, flag: 'wx' });
    fs.chmodSync(tmp, 0o600);
    fs.renameSync(tmp, target);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw new CliError(`cannot write ${file}: ${(e as Error).message}`, EXIT.usage);
  }
}

/**
 * writeEnvFile, returning its error message instead of throwing: the secrets are printed even
 * when the file cannot be written, since they are shown only this once.
 */
export function tryWriteEnvFile(io: Io, file: string, app: AppSecrets, apiUrl: string): string | undefined {
  try {
    writeEnvFile(io, file, app, apiUrl);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}
