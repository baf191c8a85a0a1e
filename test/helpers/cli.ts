/** Run bin/appreg.js as a user would, capturing output and exit code. */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// dist/test/helpers/cli.js → project root is three levels up
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const BIN = path.join(ROOT, 'bin/appreg.js');

export interface CliResult { code: number | null; stdout: string; stderr: string }

export function runCli(args: string[], opts: { env?: NodeJS.ProcessEnv; input?: string; cwd?: string; timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--', BIN, ...args], {
      cwd: opts.cwd ?? ROOT,
      env: { ...process.env, NO_COLOR: undefined, APPREG_URL: undefined, APPREG_TOKEN: undefined, APPREG_DATA_DIR: undefined, ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}
