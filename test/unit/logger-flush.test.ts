/**
 * The daemon's log is written asynchronously on stderr (src/logger.ts): lines wait in a buffer
 * while a write is under way. None may be lost at a stop: a process that logs a burst and then
 * exits at once (process.exit, as a signal handler or the hand-over does), or dies of an uncaught
 * error, still has every line in its log file; `flush()` resolves only once the lines are written
 * (a process killed outright right after it has them all); and `appreg serve` stopped by SIGTERM
 * ends its log with its last line.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { until } from '../helpers/until.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const loggerUrl = pathToFileURL(path.resolve(here, '../../src/logger.js')).href;
const bin = path.resolve(here, '../../../bin/appreg.js');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-logger-flush-'));
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));

const LINES = 20_000;

/** Run `body` (after a logger `log` on stderr has logged LINES lines) in a node process whose stderr is a file. */
async function run(name: string, body: string): Promise<{ code: number | null; signal: string | null; log: string }> {
  const script = path.join(dir, `${name}.mjs`);
  fs.writeFileSync(
    script,
    `import { createLogger } from ${JSON.stringify(loggerUrl)};
const log = createLogger({ level: 'info' });
for (let i = 0; i < ${LINES}; i++) log.info('line', { i, pad: 'x'.repeat(100) });
log.info('the last line');
${body}
`,
  );
  const file = path.join(dir, `${name}.log`);
  const fd = fs.openSync(file, 'w');
  const child = spawn(process.execPath, [script], { stdio: ['ignore', 'ignore', fd] });
  fs.closeSync(fd);
  const [code, signal] = await new Promise<[number | null, string | null]>((r) =>
    child.once('exit', (c, s) => r([c, s])),
  );
  return { code, signal, log: fs.readFileSync(file, 'utf8') };
}

const lines = (log: string) =>
  log
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; i?: number });

t.test('process.exit right after a burst: every line is in the file, the last one last', async (t) => {
  const r = await run('exit', 'process.exit(0);');
  t.equal(r.code, 0);
  const got = lines(r.log);
  t.equal(got.length, LINES + 1);
  t.equal(got.at(-1)?.msg, 'the last line');
  t.equal(got[LINES - 1]?.i, LINES - 1, 'in order');
});

t.test('an uncaught error right after a burst: every line, then the error', async (t) => {
  const r = await run('fatal', "throw new Error('fatal after logging');");
  t.equal(r.code, 1);
  t.equal(lines(r.log).length, LINES + 1);
  t.match(r.log, /"msg":"the last line"[^]*fatal after logging/);
});

t.test('flush() resolves once the lines are written: a process killed right after it loses none', async (t) => {
  const r = await run('flush', "await log.flush(); process.kill(process.pid, 'SIGKILL');");
  t.equal(r.signal, 'SIGKILL', 'no exit handler ran');
  t.equal(lines(r.log).length, LINES + 1);
});

t.test('appreg serve stopped by SIGTERM: its log file ends with its last line', async (t) => {
  const file = path.join(dir, 'serve.log');
  const fd = fs.openSync(file, 'w');
  const child = spawn(
    process.execPath,
    [bin, 'serve', '--port', '0', '--data-dir', path.join(dir, 'data'), '--log-format', 'json'],
    { stdio: ['ignore', 'ignore', fd] },
  );
  fs.closeSync(fd);
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  t.teardown(() => void (child.exitCode === null && child.kill('SIGKILL')));
  const listening = await until(
    () => fs.readFileSync(file, 'utf8'),
    (s) => s.includes('appreg listening on'),
  );
  t.match(listening, /appreg listening on/);
  child.kill('SIGTERM');
  t.equal(await exited, 0);
  t.match(lines(fs.readFileSync(file, 'utf8')).at(-1), { msg: 'SIGTERM: shutting down' });
});
