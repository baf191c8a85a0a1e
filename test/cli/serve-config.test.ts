/**
 * `appreg serve` with a bad setting, wherever it comes from: one line naming the source and the setting, exit 2
 * (usage), and nothing started: no store, no key, no credentials, no daemon.json in the data directory.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { runMain } from '../helpers/cli.js';
import { tempDir } from '../helpers/daemon.js';

t.test('a bad setting stops serve before anything starts', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify({ socketPingIntervalMs: 'often' }));
  const cases: Array<[string[], NodeJS.ProcessEnv, string]> = [
    [[], {}, `config file ${file}: socketPingIntervalMs must be a non-negative number, got "often"`],
    [
      ['--config', path.join(dir, 'none.json')],
      { APPREG_FSYNC: 'yes' },
      `config file ${path.join(dir, 'none.json')} does not exist`,
    ],
  ];
  for (const [args, env, message] of cases) {
    const r = await runMain(['serve', '--port', '0', '--data-dir', dir, ...args], { env });
    t.equal(r.code, 2, message);
    t.equal(r.stderr, `appreg: ${message}\n`);
  }
  fs.writeFileSync(file, '{}');
  const fromEnv = await runMain(['serve', '--port', '0', '--data-dir', dir], { env: { APPREG_FSYNC: 'yes' } });
  t.equal(fromEnv.code, 2);
  t.equal(fromEnv.stderr, 'appreg: APPREG_FSYNC: fsync must be true or false, got "yes"\n');
  const fromFlag = await runMain(['serve', '--port', '70000', '--data-dir', dir]);
  t.equal(fromFlag.code, 2);
  t.equal(fromFlag.stderr, 'appreg: --port: port must be an integer from 0 to 65535, got 70000\n');
  t.same(fs.readdirSync(dir), ['config.json'], 'nothing was made in the data directory');
});
