/**
 * docs/operations.md's systemd unit: systemd's own check of it (`systemd-analyze verify`, no warning), and its
 * command with its environment — appreg serve, JSON log lines on stderr for journald — started and stopped by SIGTERM
 * as systemd does (exit 0). The unit's /usr/local/bin/appreg, where `npm install -g` puts it, is this clone's
 * bin/appreg.js here; its port 8740 is a free one, its /var/lib/appreg a temporary directory.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { BIN, ROOT } from '../helpers/cli.js';
import { tempDir } from '../helpers/daemon.js';
import { testNeeding } from '../helpers/system-component.js';
import { serveCommand, userEnv } from '../helpers/packed.js';
import { must } from '../../src/must.js';

const doc = fs.readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
const unit = must(/```ini\n([\s\S]*?)```/.exec(doc)?.[1], "operations.md's unit");
const service = (key: string) => [...unit.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => must(m[1]));
const execStart = must(service('ExecStart')[0]);

t.test('the unit is one systemd accepts', async (t) => {
  await testNeeding(
    t,
    'systemd-analyze verify: no error, no warning',
    { path: '/usr/bin/systemd-analyze', install: 'apt-get install systemd' },
    async (t, analyze) => {
      t.match(execStart, /^\/usr\/local\/bin\/appreg serve /, 'it runs the appreg npm install -g puts on the PATH');
      const dir = tempDir('appreg-unit-');
      const file = path.join(dir, 'appreg.service');
      fs.writeFileSync(file, unit.replace('/usr/local/bin/appreg', BIN));
      const r = spawnSync(analyze, ['verify', file], { encoding: 'utf8' });
      t.equal(r.status, 0, `exit 0: ${r.stderr}`);
      t.equal(`${r.stdout}${r.stderr}`.trim(), '', 'nothing to say about it');
      // the check reads the file: a misspelt key in it is reported
      fs.writeFileSync(file, unit.replace('/usr/local/bin/appreg', BIN).replace('KillSignal=', 'KillSignl='));
      const bad = spawnSync(analyze, ['verify', file], { encoding: 'utf8' });
      t.match(bad.stderr, /Unknown key 'KillSignl'/, 'a misspelt key is caught, so the check read the unit');
    },
  );
});

t.test("the unit's command, with its environment, serves and stops on SIGTERM with exit 0", async (t) => {
  const env: Record<string, string> = {};
  for (const line of service('Environment')) {
    const [k, ...v] = line.split('=');
    env[must(k)] = v.join('=');
  }
  t.same(
    Object.keys(env).sort(),
    ['APPREG_DATA_DIR', 'APPREG_LOG_FORMAT'],
    'the unit sets the data directory and the log format',
  );
  const data = path.join(tempDir('appreg-unit-'), 'var-lib-appreg');
  env.APPREG_DATA_DIR = data;
  const command = execStart
    .replace('/usr/local/bin/appreg', `${process.execPath} ${BIN}`)
    .replace('--port 8740', '--port 0');
  const served = await serveCommand(`${command} --json`, tempDir(), userEnv({ extra: env }), (f) => t.teardown(f));
  t.ok(fs.existsSync(path.join(data, 'daemon.json')), 'its data in the unit’s data directory');
  const stopped = await served.stop();
  t.equal(stopped.code, 0, 'SIGTERM: exit 0');
  const lines = stopped.stderr.trim().split('\n');
  t.ok(
    lines.every((l) => typeof (JSON.parse(l) as { msg?: unknown }).msg === 'string'),
    `${lines.length} log lines, each a JSON object for journald`,
  );
  t.match(stopped.stderr, /"SIGTERM: shutting down"/, 'the stop is logged');
});
