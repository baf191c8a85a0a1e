import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { tempDir, manifest } from '../helpers/daemon.js';
import { BIN, captureIo, runCli, runMain, serveInProcess } from '../helpers/cli.js';
import { main } from '../../src/cli/main.js';
import { must } from '../../src/must.js';

interface Served {
  child: ChildProcess;
  url: string;
  out: () => string;
  exited: Promise<number | null>;
}

function serve(dataDir: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Served> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--', BIN, 'serve', '--port', '0', '--data-dir', dataDir, ...extra], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    // stdout and stderr together: the log (stderr) says where it listens
    const look = (c: Buffer) => {
      out += c;
      const m = /listening on (http:\/\/[^\s"]+)/.exec(out);
      if (m) resolve({ child, url: must(m[1]), out: () => out, exited });
    };
    must(child.stdout).on('data', look);
    must(child.stderr).on('data', look);
    void exited.then((code) => reject(new Error(`serve exited ${code}: ${out}`)));
  });
}

t.test('appreg serve: first start, daemon.json, CLI with no login, one daemon per dir, clean SIGTERM', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const s = await serve(dir);
  t.teardown(() => s.child.kill('SIGKILL'));
  t.match(s.out(), /first start: created workspace/);
  const daemon = JSON.parse(fs.readFileSync(path.join(dir, 'daemon.json'), 'utf8'));
  t.equal(daemon.url, s.url);
  t.equal(daemon.pid, s.child.pid);
  t.equal(fs.statSync(path.join(dir, 'credentials.json')).mode & 0o777, 0o600);

  const mf = path.join(dir, 'm.json');
  fs.writeFileSync(mf, JSON.stringify(manifest()));
  const created = await runMain(['--data-dir', dir, 'apps', 'create', '--file', mf, '--json']);
  t.equal(created.code, 0, 'the CLI found the daemon through daemon.json and used credentials.json: ' + created.stderr);

  const second = await runCli(['serve', '--port', '0', '--data-dir', dir]);
  t.equal(second.code, 8, 'exit 8: another daemon holds the data directory');
  t.match(second.stderr, /^appreg: another appreg daemon \(pid \d+\) is already running on .+\n$/, 'one line');

  s.child.kill('SIGTERM');
  t.equal(await s.exited, 0, 'SIGTERM exits 0');
  t.notOk(fs.existsSync(path.join(dir, 'daemon.json')), 'daemon.json removed');
  t.notOk(fs.existsSync(path.join(dir, 'daemon.lock')), 'lock released');

  const again = await serve(dir);
  t.notMatch(again.out(), /first start/, 'bootstraps only once');
  const list = await runMain(['--data-dir', dir, 'apps', 'list', '--json']);
  t.equal(JSON.parse(list.stdout).length, 1);
  again.child.kill('SIGINT');
  t.equal(await again.exited, 0, 'SIGINT exits 0');
});

t.test('configuration: flags beat APPREG_* environment; bad values are one-line usage errors', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const bad = await runMain(['serve', '--port', 'eighty', '--data-dir', dir]);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /port/);
  const s = await serve(dir, ['--public-url', 'http://127.0.0.1:1/'], { APPREG_PUBLIC_URL: 'http://env.invalid' });
  t.teardown(() => s.child.kill('SIGKILL'));
  t.equal(s.url, 'http://127.0.0.1:1', 'the flag won over the environment');
  s.child.kill('SIGTERM');
  await s.exited;
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ prot: 1 }));
  const typo = await runMain(['serve', '--data-dir', dir]);
  t.equal(typo.code, 2);
  t.match(typo.stderr, /unknown key "prot"/);
});

t.test('a daemon killed with SIGKILL while 100 creates are in flight loses none that were answered 2xx', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const s = await serve(dir);
  const creds = JSON.parse(fs.readFileSync(path.join(dir, 'credentials.json'), 'utf8'));
  const base = `${s.url}/workspaces/${creds.workspaceId}/workspaceUsers/${creds.workspaceUserId}`;
  const answered: string[] = [];
  let killed = false;
  const body = JSON.stringify(manifest());
  const requests = Array.from({ length: 100 }, async () => {
    try {
      const res = await fetch(`${base}/apps`, {
        method: 'POST',
        headers: { authtoken: creds.authToken, 'content-type': 'application/json' },
        body,
      });
      if (res.status === 201) {
        const app = (await res.json()) as { id: string };
        if (!killed) answered.push(app.id);
        else answered.push(app.id); // an answer that arrived at all was sent before the kill
        if (answered.length >= 40 && !killed) {
          killed = true;
          s.child.kill('SIGKILL');
        }
      }
    } catch {
      /* connection cut by the kill */
    }
  });
  await Promise.all(requests);
  if (!killed) s.child.kill('SIGKILL');
  await s.exited;
  t.ok(answered.length >= 40, `${answered.length} creates were answered before the kill`);
  fs.rmSync(path.join(dir, 'daemon.json'), { force: true });
  const again = await serve(dir);
  t.teardown(() => again.child.kill('SIGKILL'));
  const list = (await (
    await fetch(`${again.url}/workspaces/${creds.workspaceId}/workspaceUsers/${creds.workspaceUserId}/apps/mine`, {
      headers: { authtoken: creds.authToken },
    })
  ).json()) as Array<{ id: string }>;
  const ids = new Set(list.map((a) => a.id));
  const lost = answered.filter((id) => !ids.has(id));
  t.same(lost, [], 'every answered create survived');
  again.child.kill('SIGTERM');
  await again.exited;
});

t.test('serve on a taken port writes nothing; the first start that succeeds prints the first-start hint', async (t) => {
  const { createServer } = await import('node:net');
  const holder = createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => holder.close(() => r())));
  const port = String((holder.address() as { port: number }).port);
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const taken = await runMain(['serve', '--port', port, '--data-dir', dir]);
  t.equal(taken.code, 2, 'exit 2: the port is in use');
  t.same(fs.readdirSync(dir), [], 'no key, no credentials, no workspace, no journal written');
  const s = await serveInProcess(['--data-dir', dir]);
  t.ok(s.url, 'then it starts on a free port');
  t.match(s.out.stderr + s.out.stdout, /first start: created workspace/, 'and says it is the first start');
  t.equal(await s.stop(), 0);
});

t.test(
  'a stop signal that comes while the daemon starts stops it once it has started, through its shutdown',
  async (t) => {
    const { io, out } = captureIo({ env: { NO_COLOR: '1' } });
    let askedBeforeListening: boolean | undefined;
    // the signal is already there when serve asks for it: serve must ask before it starts, not after it listens
    io.stopSignal = () => {
      askedBeforeListening = !/listening on/.test(out.stderr);
      return Promise.resolve('SIGTERM');
    };
    const dir = tempDir();
    const code = await main(['node', BIN, 'serve', '--port', '0', '--data-dir', dir], io);
    t.equal(askedBeforeListening, true, 'serve listens for the signal before the daemon starts');
    t.equal(code, 0, 'exit 0');
    t.match(out.stderr, /listening on[\s\S]*SIGTERM: shutting down/, 'it started, then shut down');
    t.equal(out.stderr.match(/shutting down/g)?.length, 1, 'once');
    t.notOk(fs.existsSync(path.join(dir, 'daemon.lock')), 'its lock given back');
  },
);
