/**
 * The data directory's lock: a stale lock (owner gone, a zombie, or its pid reused by an
 * unrelated process) is taken over; a live daemon's lock never is; of simultaneous starts on
 * a stale lock exactly one wins.
 */
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { acquireLock, StartupError } from '../../src/server/data-dir.js';
import { must } from '../../src/must.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-lock-'));
const children = new Set<ChildProcess>();
t.teardown(() => {
  for (const c of children) c.kill('SIGKILL');
  fs.rmSync(tmpRoot, { recursive: true, force: true });
});
let n = 0;
const newDir = () => {
  const d = path.join(tmpRoot, `d${++n}`);
  fs.mkdirSync(d, { mode: 0o700 });
  return d;
};
const hasProc = fs.existsSync('/proc/self/stat');
const lockFile = (dir: string) => path.join(dir, 'daemon.lock');
const startOf = (pid: number) => {
  const raw = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return must(raw.slice(raw.lastIndexOf(')') + 2).split(' ')[19]);
};
const stateOf = (pid: number) => fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function track(cp: ChildProcess): ChildProcess {
  children.add(cp);
  cp.on('exit', () => children.delete(cp));
  return cp;
}
const exited = (cp: ChildProcess) =>
  new Promise<void>((r) => (cp.exitCode !== null || cp.signalCode !== null ? r() : cp.once('exit', () => r())));
/** A live process unrelated to appreg. */
function spawnSleep(): ChildProcess {
  return track(spawn('sleep', ['30'], { stdio: 'ignore' }));
}
function refusedWith(t: Tap.Test, f: () => unknown, msg: string) {
  let err: unknown = null;
  try {
    f();
  } catch (e) {
    err = e;
  }
  t.type(err, StartupError, msg);
  t.equal((err as StartupError | null)?.reason, 'locked', `${msg}: reason locked`);
}

t.test('a lock is taken, refused to a second start in the same process, and released', async (t) => {
  const dir = newDir();
  const release = acquireLock(dir);
  t.match(JSON.parse(fs.readFileSync(lockFile(dir), 'utf8')), { pid: process.pid });
  t.equal(fs.statSync(lockFile(dir)).mode & 0o777, 0o600);
  refusedWith(t, () => acquireLock(dir), 'second start');
  release();
  t.notOk(fs.existsSync(lockFile(dir)), 'released');
  t.same(fs.readdirSync(dir), [], 'no temp or guard file left');
});

t.test(
  'a lock whose pid now belongs to an unrelated live process (another start time) is taken over',
  { skip: !hasProc && 'needs /proc' },
  async (t) => {
    const dir = newDir();
    const sl = spawnSleep();
    await sleep(50);
    fs.writeFileSync(
      lockFile(dir),
      JSON.stringify({ pid: sl.pid, start: String(Number(startOf(must(sl.pid))) - 1) }) + '\n',
    );
    const release = acquireLock(dir);
    t.match(JSON.parse(fs.readFileSync(lockFile(dir), 'utf8')), { pid: process.pid }, 'taken over');
    release();
    // the same pid with its real start time is a live owner: refused
    fs.writeFileSync(lockFile(dir), JSON.stringify({ pid: sl.pid, start: startOf(must(sl.pid)) }) + '\n');
    refusedWith(t, () => acquireLock(dir), 'live owner');
    sl.kill('SIGKILL');
    await exited(sl);
  },
);

t.test(
  'an old bare-pid lock: a process that started after the lock was written is not its owner',
  { skip: !hasProc && 'needs /proc' },
  async (t) => {
    const dir = newDir();
    const sl = spawnSleep();
    await sleep(50);
    fs.writeFileSync(lockFile(dir), String(sl.pid));
    const hourAgo = new Date(Date.now() - 3600_000);
    fs.utimesSync(lockFile(dir), hourAgo, hourAgo);
    const release = acquireLock(dir);
    t.match(JSON.parse(fs.readFileSync(lockFile(dir), 'utf8')), { pid: process.pid }, 'taken over');
    release();
    // a process running since before the lock was written may be its owner: refused
    fs.writeFileSync(lockFile(dir), String(process.ppid));
    refusedWith(t, () => acquireLock(dir), 'old lock of a process older than it');
    sl.kill('SIGKILL');
    await exited(sl);
  },
);

t.test(
  'a lock naming a zombie (with its true start time) is taken over',
  { skip: !hasProc && 'needs /proc' },
  async (t) => {
    const dir = newDir();
    // `sleep 0.3` exits after its parent (sh) was exec'd into `sleep 30`, which never reaps it. (With
    // `sleep 0`, a busy machine let the child end while sh still ran, and sh reaped it: no zombie.)
    const sh = track(
      spawn('sh', ['-c', 'sleep 0.3 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] }),
    );
    const zombie = await new Promise<number>((r) =>
      must(sh.stdout).once('data', (b: Buffer) => r(Number(b.toString().trim()))),
    );
    for (let i = 0; i < 300 && stateOf(zombie) !== 'Z'; i++) await sleep(10);
    t.equal(stateOf(zombie), 'Z', 'a zombie');
    fs.writeFileSync(lockFile(dir), JSON.stringify({ pid: zombie, start: startOf(zombie) }) + '\n');
    const release = acquireLock(dir);
    t.match(JSON.parse(fs.readFileSync(lockFile(dir), 'utf8')), { pid: process.pid }, 'taken over');
    release();
    sh.kill('SIGKILL');
    await exited(sh);
  },
);

const dataDirModule = new URL('../../src/server/data-dir.js', import.meta.url).href;
/** A process that takes the lock on "go" and reports, then holds it until its stdin ends. */
function lockChild(dir: string): { cp: ChildProcess; ready: Promise<void>; result: Promise<string> } {
  const code = `
    import { acquireLock } from ${JSON.stringify(dataDirModule)};
    process.stdin.once('data', () => {
      let r;
      try { acquireLock(${JSON.stringify(dir)}); r = 'won'; } catch (e) { r = e.reason ?? String(e); }
      process.stdout.write(r + '\\n');
    });
    process.stdin.on('end', () => process.exit(0));
    process.stdout.write('ready\\n');`;
  const cp = track(
    spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['pipe', 'pipe', 'inherit'] }),
  );
  let buf = '';
  let onReady!: () => void;
  let onResult!: (s: string) => void;
  const ready = new Promise<void>((r) => (onReady = r));
  const result = new Promise<string>((r) => (onResult = r));
  must(cp.stdout).on('data', (b: Buffer) => {
    buf += b.toString();
    for (let i = buf.indexOf('\n'); i !== -1; i = buf.indexOf('\n')) {
      const l = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (l === 'ready') onReady();
      else onResult(l);
    }
  });
  return { cp, ready, result };
}

t.test("a running daemon's lock is refused; once it is gone, taken over", async (t) => {
  const dir = newDir();
  const d = lockChild(dir);
  await d.ready;
  must(d.cp.stdin).write('go\n');
  t.equal(await d.result, 'won');
  refusedWith(t, () => acquireLock(dir), 'live daemon');
  d.cp.kill('SIGKILL'); // dies holding the lock
  await exited(d.cp);
  const release = acquireLock(dir);
  t.pass('stale lock of a killed daemon taken over');
  release();
});

t.test('simultaneous starts on a stale lock: exactly one wins', { skip: !hasProc && 'needs /proc' }, async (t) => {
  for (let round = 0; round < 3; round++) {
    const dir = newDir();
    const sl = spawnSleep(); // the stale lock names a live process whose pid was "reused"
    await sleep(20);
    fs.writeFileSync(lockFile(dir), JSON.stringify({ pid: sl.pid, start: '1' }) + '\n');
    const starters = Array.from({ length: 8 }, () => lockChild(dir));
    await Promise.all(starters.map((s) => s.ready));
    for (const s of starters) must(s.cp.stdin).write('go\n');
    const results = await Promise.all(starters.map((s) => s.result));
    t.equal(
      results.filter((r) => r === 'won').length,
      1,
      `round ${round}: exactly one of 8 won (${results.join(',')})`,
    );
    t.same(
      results.filter((r) => r !== 'won' && r !== 'locked'),
      [],
      'the others were refused as locked',
    );
    for (const s of starters) must(s.cp.stdin).end();
    await Promise.all(starters.map((s) => exited(s.cp)));
    sl.kill('SIGKILL');
    await exited(sl);
    t.same(
      fs.readdirSync(dir).filter((f) => f !== 'daemon.lock'),
      [],
      'no temp or guard file left',
    );
  }
});
