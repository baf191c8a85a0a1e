/**
 * The daemon's log format: `serve --log-format` beats APPREG_LOG_FORMAT beats `logFormat` in the config file beats the
 * terminal.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { tempDir } from '../helpers/daemon.js';
import { runMain, serveInProcess } from '../helpers/cli.js';

const isPretty = (line: string) => /^\d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO |WARN |ERROR) \S/.test(line);
const isJson = (line: string) => {
  try {
    return typeof JSON.parse(line).level === 'string';
  } catch {
    return false;
  }
};

t.test('logFormat: flag beats env beats config file beats the terminal', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const cases: Array<{ file?: string; env?: string; flag?: string; tty: boolean; want: 'pretty' | 'json' }> = [
    { file: 'pretty', tty: false, want: 'pretty' },
    { file: 'json', tty: true, want: 'json' },
    { env: 'pretty', tty: false, want: 'pretty' },
    { file: 'pretty', env: 'json', tty: true, want: 'json' },
    { file: 'json', env: 'json', flag: 'pretty', tty: false, want: 'pretty' },
    { env: 'pretty', flag: 'json', tty: true, want: 'json' },
    { tty: true, want: 'pretty' },
    { tty: false, want: 'json' },
  ];
  for (const c of cases) {
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(c.file ? { logFormat: c.file } : {}));
    const s = await serveInProcess(
      ['--data-dir', dir, '--log-level', 'debug', ...(c.flag ? ['--log-format', c.flag] : [])],
      { tty: c.tty, env: { APPREG_LOG_FORMAT: c.env } },
    );
    t.ok(s.url, 'listening');
    await fetch(`${s.url}/healthz`);
    await fetch(`${s.url}/nope`);
    t.equal(await s.stop(), 0);
    const lines = s.out.stderr.trim().split('\n');
    const what = JSON.stringify(c);
    t.ok(lines.length >= 2, `the daemon logged (${what})`);
    t.ok(lines.every(c.want === 'pretty' ? isPretty : isJson), `${c.want} lines for ${what}: ${lines[0]}`);
  }
});

t.test('a bad logFormat anywhere is a one-line usage error naming where it came from', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify({ logFormat: 'xml' }));
  const fromFile = await runMain(['serve', '--port', '0', '--data-dir', dir]);
  t.equal(fromFile.code, 2);
  t.equal(fromFile.stderr, `appreg: config file ${file}: logFormat must be pretty or json, got "xml"\n`);
  fs.writeFileSync(file, '{}');
  const fromEnv = await runMain(['serve', '--port', '0', '--data-dir', dir], { env: { APPREG_LOG_FORMAT: 'text' } });
  t.equal(fromEnv.code, 2);
  t.equal(fromEnv.stderr, 'appreg: APPREG_LOG_FORMAT: logFormat must be pretty or json, got "text"\n');
  const fromFlag = await runMain(['serve', '--port', '0', '--data-dir', dir, '--log-format', 'yaml']);
  t.equal(fromFlag.code, 2);
  t.equal(fromFlag.stderr, 'appreg: --log-format: logFormat must be pretty or json, got "yaml"\n');
});

t.test('loadConfig: logFormat is unset by default, read from the file and APPREG_LOG_FORMAT', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  t.equal(loadConfig({ dataDir: dir }, {}).logFormat, undefined, 'unset: serve follows the terminal');
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ logFormat: 'pretty' }));
  t.equal(loadConfig({ dataDir: dir }, {}).logFormat, 'pretty');
  t.equal(loadConfig({ dataDir: dir }, { APPREG_LOG_FORMAT: 'json' }).logFormat, 'json');
  t.equal(loadConfig({ dataDir: dir, logFormat: 'pretty' }, { APPREG_LOG_FORMAT: 'json' }).logFormat, 'pretty');
});
