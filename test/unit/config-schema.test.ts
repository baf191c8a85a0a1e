/**
 * The daemon's configuration is checked against schemas/config.schema.json: the schema names every setting of
 * Config with its default, the validator generated from it is current, and each kind of bad setting is refused in
 * one line naming the source (config file, environment variable, flag), the setting, what it may be and what it got.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';
import { defaults, loadConfig, type Config } from '../../src/config.js';

const schema = JSON.parse(fs.readFileSync(path.join(ROOT, 'schemas/config.schema.json'), 'utf8')) as {
  properties: Record<string, { default?: unknown }>;
};

/** Every key of Config; the type makes this list complete. */
const CONFIG_KEYS = Object.keys({
  ...defaults,
  databaseUrl: 1,
  publicUrl: 1,
  appUrl: 1,
  keyFile: 1,
  logFormat: 1,
  egressAllowLoopback: 1,
} satisfies Record<keyof Config, unknown>);

t.test('the schema describes every setting, with the defaults the daemon uses', async (t) => {
  const { $schema, ...settings } = schema.properties;
  t.ok($schema, 'a config file may name its schema');
  t.same(Object.keys(settings).sort(), [...CONFIG_KEYS].sort());
  for (const [k, v] of Object.entries(defaults)) {
    if (k === 'dataDir') t.equal(settings[k]?.default, undefined, 'dataDir: its default depends on the install');
    else t.same(settings[k]?.default, v, `${k}: default`);
  }
});

t.test('the generated validator is what the schema gives', async (t) => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'tools/config-validator.mjs'), '--check'], {
    encoding: 'utf8',
  });
  t.equal(r.status, 0, r.stderr || 'current');
});

t.test('each kind of bad setting is one line: source, setting, what it may be, what it got', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-cfg-schema-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'config.json');
  const fromFile = (settings: unknown) => {
    fs.writeFileSync(file, JSON.stringify(settings));
    try {
      return loadConfig({ dataDir: dir }, {});
    } finally {
      fs.rmSync(file);
    }
  };
  const fromEnv = (env: Record<string, string>) => loadConfig({ dataDir: dir }, env);
  const fromFlag = (flags: Partial<Record<keyof Config, unknown>>) => loadConfig({ dataDir: dir, ...flags }, {});

  const cases: Array<[string, () => unknown, string]> = [
    [
      'a negative number',
      () => fromEnv({ APPREG_DELIVERY_BUDGET_MS: '-1' }),
      'APPREG_DELIVERY_BUDGET_MS: deliveryBudgetMs must be a non-negative number, got -1',
    ],
    [
      'text for a number',
      () => fromEnv({ APPREG_MAX_CONNECTIONS: 'many' }),
      'APPREG_MAX_CONNECTIONS: maxConnections must be a non-negative number, got "many"',
    ],
    [
      'a JSON type the setting is not',
      () => fromFile({ rateLimitLogin: [20] }),
      `config file ${file}: rateLimitLogin must be a non-negative number, got [20]`,
    ],
    [
      'a port out of range',
      () => fromFile({ port: 65536 }),
      `config file ${file}: port must be an integer from 0 to 65535, got 65536`,
    ],
    [
      'a port with a fraction',
      () => fromFlag({ port: '80.5' }),
      '--port: port must be an integer from 0 to 65535, got 80.5',
    ],
    [
      'not a boolean',
      () => fromEnv({ APPREG_FSYNC: 'maybe' }),
      'APPREG_FSYNC: fsync must be true or false, got "maybe"',
    ],
    [
      'not one of the allowed words',
      () => fromFlag({ logLevel: 'loud' }),
      '--log-level: logLevel must be debug, info, warn or error, got "loud"',
    ],
    ['an empty string', () => fromFile({ host: '' }), `config file ${file}: host must be a non-empty string, got ""`],
    [
      'a malformed list',
      () => fromEnv({ APPREG_DELIVERY_RETRY_SCHEDULE: '1,,5' }),
      'APPREG_DELIVERY_RETRY_SCHEDULE: deliveryRetrySchedule must be comma-separated seconds, e.g. "1,5,30", got "1,,5"',
    ],
    [
      'not an http(s) URL',
      () => fromFlag({ publicUrl: 'ftp://appreg.example.com' }),
      '--public-url: publicUrl must be an http(s) URL such as https://appreg.example.com, got "ftp://appreg.example.com"',
    ],
    [
      'not a PostgreSQL URL (its text is not repeated: it may hold a password)',
      () => fromEnv({ APPREG_DATABASE_URL: 'mysql://root:hunter2@db/appreg' }),
      'APPREG_DATABASE_URL: databaseUrl must be a PostgreSQL URL such as postgres://appreg:secret@127.0.0.1:5432/appreg',
    ],
    [
      'not an address',
      () => fromFile({ egressAllow: '10.0.0.1, intranet' }),
      `config file ${file}: egressAllow: "intranet" is not an IP address or CIDR range (for example 10.0.0.5 or 10.0.0.0/8)`,
    ],
    [
      'an unknown key',
      () => fromFile({ prot: 8740 }),
      `config file ${file}: unknown key "prot" (the settings are listed in docs/configuration.md)`,
    ],
  ];
  for (const [kind, load, message] of cases) {
    let thrown: unknown;
    try {
      load();
    } catch (e) {
      thrown = e;
    }
    t.equal((thrown as Error | undefined)?.message, message, kind);
  }
});

t.test('text from the environment or a flag is read as the setting type', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-cfg-schema-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const c = loadConfig(
    { dataDir: dir, port: '0', allowInsecureRedirects: true },
    {
      APPREG_FSYNC: '0',
      APPREG_PLATFORM_RATE_LIMITS: 'false',
      APPREG_BODY_LIMIT_BYTES: '2048',
      APPREG_EGRESS_ALLOW_LOOPBACK: '1',
    },
  );
  t.same(
    [c.port, c.allowInsecureRedirects, c.fsync, c.platformRateLimits, c.bodyLimitBytes, c.egressAllowLoopback],
    [0, true, false, false, 2048, true],
  );
  fs.writeFileSync(
    path.join(dir, 'config.json'),
    JSON.stringify({ $schema: 'https://appreg.dev/schemas/config.schema.json', port: 9001 }),
  );
  t.equal(loadConfig({ dataDir: dir }, {}).port, 9001, 'a config file may name its schema for editors');
});
