import t from 'tap';
import { createLogger, redact } from '../../src/logger.js';
import { loadConfig, ConfigError, envName } from '../../src/config.js';
import { newSecret } from '../../src/crypto.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

t.test('the logger redacts secret-looking fields and values', async (t) => {
  let out = '';
  const log = createLogger({ level: 'debug', stream: { write: (s: string) => (out += s) } });
  const secret = newSecret('acs');
  log.info(`oops ${secret}`, {
    authtoken: 'eyJhbGciOi.eyJzdWIiOiJ3.dTAifQsig',
    nested: { clientSecret: 'x', ok: 1 },
    note: `key ${newSecret('apk')}`,
  });
  t.notMatch(out, secret);
  t.notMatch(out, /apk_/);
  t.notMatch(out, /eyJhbGciOi/);
  t.match(out, /"ok":1/);
  t.same(redact({ signature: 'abc', count: 3 }), { signature: '[redacted]', count: 3 });
  for (const prefix of ['ald', 'axt'])
    t.equal(redact(`lead ${newSecret(prefix)}`), 'lead [redacted]', `${prefix}_ values (login leads, exchange tokens)`);
});

t.test('enabled: whether a level is written, for callers whose line costs something to build', async (t) => {
  let out = '';
  const log = createLogger({ level: 'warn', stream: { write: (s: string) => (out += s) } });
  t.same(
    (['debug', 'info', 'warn', 'error'] as const).map((l) => log.enabled(l)),
    [false, false, true, true],
  );
  t.equal(log.child({ appId: 'app_1' }).enabled('info'), false, 'a child answers as its parent');
  t.equal(createLogger({ level: 'debug', stream: { write: () => {} } }).enabled('debug'), true);
  log.info('not written');
  log.warn('written');
  t.notMatch(out, /not written/);
  t.match(out, /written/);
});

t.test('config: defaults < file < env < flags, and clear errors', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-cfg-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  t.equal(envName('dataDir'), 'APPREG_DATA_DIR');
  t.equal(loadConfig({ dataDir: dir }, {}).port, 8740);
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ port: 9001, host: '0.0.0.0' }));
  t.equal(loadConfig({ dataDir: dir }, {}).port, 9001);
  t.equal(loadConfig({ dataDir: dir }, { APPREG_PORT: '9002' }).port, 9002);
  t.equal(loadConfig({ dataDir: dir, port: '9003' }, { APPREG_PORT: '9002' }).port, 9003);
  t.equal(loadConfig({ dataDir: dir }, {}).host, '0.0.0.0');
  t.throws(
    () => loadConfig({ dataDir: dir, port: 'x' }, {}),
    /--port: port must be an integer from 0 to 65535, got "x"/,
  );
  t.ok(
    (() => {
      try {
        loadConfig({ dataDir: dir, port: 'x' }, {});
      } catch (e) {
        return e instanceof ConfigError;
      }
    })(),
    'a ConfigError',
  );
  t.throws(
    () => loadConfig({ dataDir: dir, port: 70000 }, {}),
    /--port: port must be an integer from 0 to 65535, got 70000/,
  );
  t.throws(() => loadConfig({ dataDir: dir }, { APPREG_FSYNC: 'maybe' }), /APPREG_FSYNC/);
  t.throws(() => loadConfig({ config: path.join(dir, 'nope.json') }, {}), /does not exist/);
});
