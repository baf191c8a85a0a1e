/** Start-up refuses what would lose or misread data; /healthz says when the store cannot write. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { startTestDaemon, tempDir } from '../helpers/daemon.js';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startDaemon, StartupError } from '../../src/server/start.js';
import { tree } from '../helpers/file-tree.js';

const hashes = (dir: string) =>
  Object.fromEntries(
    fs
      .readdirSync(dir)
      .filter((f) => fs.statSync(path.join(dir, f)).isFile())
      .map((f) => [
        f,
        crypto
          .createHash('sha256')
          .update(fs.readFileSync(path.join(dir, f)))
          .digest('hex'),
      ]),
  );
const start = (dataDir: string, allowFresh?: boolean) =>
  startDaemon({ ...loadConfig({ dataDir, port: 0 }, {}), logLevel: 'error' }, { logger: silentLogger, allowFresh });

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
  await t.rejects(
    start(dir),
    { reason: 'data', message: /appreg.json: is missing but the directory holds state/ },
    'refused, naming what is missing',
  );
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

/**
 * A data directory whose journal holds a commit the data file does not (a daemon that stopped
 * without folding its journal in: a crash, a kill): a start replays it, and a clean stop folds it
 * into appreg.json and removes the journal.
 */
async function dataDirWithJournal(): Promise<string> {
  const dir = tempDir();
  const d = await startTestDaemon({ dataDir: dir });
  await d.stop();
  const seq = (JSON.parse(fs.readFileSync(path.join(dir, 'appreg.json'), 'utf8')) as { journalSeq: number }).journalSeq;
  const line = {
    seq: seq + 1,
    changes: [
      {
        table: 'workspaces',
        id: 'ws_from_the_journal',
        value: { id: 'ws_from_the_journal', name: 'Only in the journal', createdAt: new Date().toISOString() },
      },
    ],
  };
  fs.writeFileSync(path.join(dir, 'appreg.journal.1'), JSON.stringify(line) + '\n', { mode: 0o600 });
  return dir;
}

const outcome = (p: Promise<{ close(): Promise<void> }>) =>
  p.then(
    async (h) => {
      await h.close();
      return undefined;
    },
    (e: unknown) => e,
  );

/** A port another server holds. */
async function takenPort(t: { teardown(fn: () => unknown): void }): Promise<number> {
  const { createServer } = await import('node:net');
  const holder = createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => holder.close(() => r())));
  return (holder.address() as { port: number }).port;
}

t.test(
  'a wrong key with a journal to replay is refused before anything is written: the journal is not folded into appreg.json',
  async (t) => {
    const dir = await dataDirWithJournal();
    fs.writeFileSync(path.join(dir, 'secret.key'), crypto.randomBytes(32).toString('base64url') + '\n');
    const before = tree(dir);
    const err = await outcome(start(dir));
    t.match(err, { reason: 'key', message: /not the key this data directory was made with/ });
    t.same(tree(dir), before, 'every file byte-for-byte unchanged, the journal still there');
  },
);

t.test('a taken port is refused before anything is written', async (t) => {
  const port = await takenPort(t);
  const startOn = (dataDir: string) =>
    startDaemon({ ...loadConfig({ dataDir, port }, {}), logLevel: 'error' }, { logger: silentLogger });

  t.test('an existing data directory with a journal: every file unchanged', async (t) => {
    const dir = await dataDirWithJournal();
    const before = tree(dir);
    t.match(await outcome(startOn(dir)), { reason: 'port_in_use' });
    t.same(tree(dir), before, 'nothing written, nothing folded, the lock given back');
  });

  t.test(
    'a new data directory: not made, no key, no workspace; the first start that succeeds is the first start',
    async (t) => {
      const dir = path.join(tempDir(), 'new', 'data');
      t.match(await outcome(startOn(dir)), { reason: 'port_in_use' });
      t.notOk(fs.existsSync(path.dirname(dir)), 'the directories the start made are gone again');
      const ok = await start(dir);
      t.teardown(() => ok.close());
      t.ok(
        ok.bootstrapped,
        'the next start that succeeds bootstraps the workspace (and serve prints the first-start hint)',
      );
    },
  );
});
