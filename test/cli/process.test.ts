/**
 * What only a real `node bin/appreg.js` process shows: the bin's wiring to main(), the exit status
 * of the process, plain output on a pipe, a reader that closes the pipe early, and Ctrl-C ending `messages tail`.
 * Everything else about the commands is tested in-process (cli.test.ts and the others).
 */
import t from 'tap';
import { until } from '../helpers/until.js';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { BIN, runCli } from '../helpers/cli.js';
import { manifest, tempDir } from '../helpers/daemon.js';

t.test('the bin prints help with examples and exits 0', async (t) => {
  const r = await runCli(['--help']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /Usage: appreg/);
  t.match(r.stdout, /Examples:/);
  t.equal(r.stderr, '');
});

t.test('the exit code of main() is the exit status of the process', async (t) => {
  const usage = await runCli(['apps', 'frobnicate']);
  t.equal(usage.code, 2, 'usage error');
  t.match(usage.stderr, /unknown command/);
  const unreachable = await runCli([
    '--url',
    'http://127.0.0.1:9',
    '--token',
    'x.eyJzdWIiOiJ1Iiwid3MiOiJ3In0.x',
    'apps',
    'list',
    '--json',
  ]);
  t.equal(unreachable.code, 3, 'daemon not reachable');
  t.match(JSON.parse(unreachable.stdout), { error: { code: 'daemon_unreachable' }, exitCode: 3 });
});

t.test('human output on a pipe has no colour', async (t) => {
  const dir = tempDir('appreg-proc-');
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'manifest.json');
  fs.writeFileSync(file, JSON.stringify(manifest()));
  const r = await runCli(['apps', 'validate', '--file', file]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /is a valid manifest/);
  t.notMatch(r.stdout, /\u001b\[/, 'no ANSI escapes');
});

t.test('a reader that closes the pipe early (appreg … | head) is not a crash', async (t) => {
  const child = spawn(process.execPath, ['--', BIN, '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.destroy(); // the reader is gone before the first write
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
  t.equal(code, 0, stderr);
  t.notMatch(stderr, /EPIPE|Error/, 'no stack trace');
});

t.test('messages tail follows until Ctrl-C (SIGINT), then exits 0', async (t) => {
  const { startTestDaemon } = await import('../helpers/daemon.js');
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const child = spawn(
    process.execPath,
    ['--', BIN, '--url', d.url, '--token', d.token, 'messages', 'tail', 'general', '--interval-ms', '50'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  await until(() => /following/.test(stderr));
  await d.api(`${d.mgmt}/channels/general/messages`, { method: 'POST', json: { text: 'seen live' } });
  await until(() => /seen live/.test(stdout));
  child.kill('SIGINT');
  const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
  t.equal(code, 0, stderr);
  t.match(stdout, /: seen live msg_/);
});
