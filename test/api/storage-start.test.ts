/** Start-up refuses what would lose or misread data; /healthz says when the store cannot write. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { startTestDaemon, tempDir } from '../helpers/daemon.js';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startDaemon, StartupError } from '../../src/server/start.js';

const hashes = (dir: string) => Object.fromEntries(fs.readdirSync(dir).filter((f) => fs.statSync(path.join(dir, f)).isFile()).map((f) => [f, crypto.createHash('sha256').update(fs.readFileSync(path.join(dir, f))).digest('hex')]));
const start = (dataDir: string, allowFresh?: boolean) => startDaemon({ ...loadConfig({ dataDir, port: 0 }, {}), logLevel: 'error' }, { logger: silentLogger, allowFresh });

t.test('another valid key in secret.key is refused at start, every file unchanged', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const d = await startTestDaemon({ dataDir: dir });
  await d.stop();
  fs.writeFileSync(path.join(dir, 'secret.key'), crypto.randomBytes(32).toString('base64url') + '\n');
  const before = hashes(dir);
  const err = await start(dir).then(
    async (h) => {
      await h.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  t.ok(err instanceof StartupError, 'refused');
  t.equal((err as StartupError).reason, 'key');
  t.match((err as Error).message, /key/);
  t.same(hashes(dir), before, 'nothing was written');
});

t.test('a data directory that lost appreg.json refuses to start, unless started fresh on purpose', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const d = await startTestDaemon({ dataDir: dir });
  const firstOwner = d.workspaceUserId;
  await d.stop();
  for (const f of fs.readdirSync(dir)) if (f.startsWith('appreg.')) fs.rmSync(path.join(dir, f));
  const creds = fs.readFileSync(path.join(dir, 'credentials.json'), 'utf8');
  await t.rejects(start(dir), { reason: 'data', message: /appreg.json: is missing but the directory holds state/ }, 'refused, naming what is missing');
  t.equal(fs.readFileSync(path.join(dir, 'credentials.json'), 'utf8'), creds, 'credentials.json was not overwritten');
  const fresh = await start(dir, true);
  t.teardown(() => fresh.close());
  t.ok(fresh.bootstrapped, 'a new workspace with --allow-fresh');
  t.not(fresh.bootstrapped?.workspaceUserId, firstOwner);
});

t.test('/healthz answers 503 with the reason while the store cannot write', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  t.same(await (await fetch(`${d.url}/healthz`)).json(), { ok: true });
  const real = d.parts.store.health.bind(d.parts.store);
  d.parts.store.health = () => ({ ok: false, reason: 'ENOSPC: no space left on device' });
  t.teardown(() => {
    d.parts.store.health = real;
  });
  const res = await fetch(`${d.url}/healthz`);
  t.equal(res.status, 503);
  t.same(await res.json(), { ok: false, reason: 'ENOSPC: no space left on device' });
});

t.test('a data directory whose key file is missing refuses to start rather than make a new key', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const d = await startTestDaemon({ dataDir: dir });
  await d.stop();
  fs.rmSync(path.join(dir, 'secret.key'));
  await t.rejects(start(dir), { reason: 'key', message: /key file .* is missing/ });
  t.notOk(fs.existsSync(path.join(dir, 'secret.key')), 'no new key was written');
});
