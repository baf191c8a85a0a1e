/**
 * Issue 33 point 4: the official CLI (`pumble-cli login`) refuses an address without a dotted domain ending in 2 to
 * 4 characters, so it could not log in as the owner@localhost the first start made. The owner is now
 * owner@appreg.test, and the CLI's login (lead, code, activate, lead login: as test/api/lead-login.test.ts sends it)
 * works for them; a data directory made before keeps its owner@localhost, who still logs in and whose credentials are
 * still written by a start without credentials.json. `users create` warns about an address the CLI would refuse.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, runMain, serveInProcess } from '../helpers/cli.js';
import { tempDir } from '../helpers/daemon.js';
import { must } from '../../src/must.js';

/** The official CLI's check of the address typed at its login, in words of our own. */
function officialCliTakes(email: string): boolean {
  const [local = '', domain = ''] = email.split('@');
  const labels = domain.split('.');
  return (
    /^[\w.-]+$/.test(local) &&
    labels.length > 1 &&
    labels.every((l) => /^[\w-]+$/.test(l)) &&
    /^[\w-]{2,4}$/.test(must(labels.at(-1)))
  );
}

const post = async (url: string, json: unknown) => {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(json),
  });
  return { status: r.status, body: (await r.json().catch(() => undefined)) as Record<string, unknown> | undefined };
};

/** The official CLI's login as `email`, the code read as `appreg users login-code` shows it to the owner. */
async function cliLogin(url: string, dataDir: string, email: string): Promise<string> {
  const lead = await post(`${url}/lead`, { email });
  if (lead.status !== 200) return `lead ${lead.status}`;
  const code = await runMain(['--data-dir', dataDir, 'users', 'login-code', '--email', email, '--json']);
  if (code.code !== 0) return `login-code: ${code.stderr}`;
  const act = await post(`${url}/lead/activate`, { email, code: JSON.parse(code.stdout).code, leadId: lead.body?.id });
  if (act.status !== 200) return `activate ${act.status}`;
  const login = await post(`${url}/lead/login`, { leadId: lead.body?.id });
  const items = (login.body?.items ?? []) as Array<{ workspace: { id: string }; exchangeToken: string }>;
  const first = must(items[0]);
  const ex = await post(`${url}/workspaces/${first.workspace.id}/exchange`, { exchangeToken: first.exchangeToken });
  return ex.status === 200 && typeof ex.body?.token === 'string' ? 'logged in' : `exchange ${ex.status}`;
}

t.test('the owner a first start makes has an address the official CLI takes, and logs in with it', async (t) => {
  const dir = tempDir('appreg-owner-email-');
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const d = await serveInProcess(['--data-dir', dir]);
  t.teardown(() => d.stop());
  const who = JSON.parse((await runMain(['--data-dir', dir, 'whoami', '--json'])).stdout) as { email: string };
  t.equal(who.email, 'owner@appreg.test');
  t.ok(officialCliTakes(who.email), 'the official CLI takes it');
  t.notOk(officialCliTakes('owner@localhost'), 'as it did not take the old one');
  t.equal(await cliLogin(must(d.url), dir, who.email), 'logged in');

  const users = JSON.parse((await runMain(['--data-dir', dir, 'users', 'list', '--json'])).stdout) as Array<{
    email: string;
  }>;
  t.ok(
    users.every((u) => officialCliTakes(u.email)),
    `every user the daemon made: ${users.map((u) => u.email).join(', ')}`,
  );

  const ws = JSON.parse((await runMain(['--data-dir', dir, 'workspaces', 'list', '--json'])).stdout)[0].id as string;
  const made = (email: string) =>
    runMain(['--data-dir', dir, 'users', 'create', '--workspace', ws, '--email', email, '--name', 'Dev']);
  const local = await made('dev@localhost');
  t.equal(local.code, 0, 'an address the CLI refuses is still taken: the daemon has no such rule');
  t.match(local.stderr, /warning: the official CLI \(pumble-cli login\) refuses dev@localhost/);
  t.equal((await made('dev@example.com')).stderr, '', 'no warning for one it takes');
});

t.test('a data directory made before keeps its owner@localhost, who still logs in', async (t) => {
  const dir = path.join(tempDir('appreg-owner-legacy-'), 'data');
  t.teardown(() => fs.rmSync(path.dirname(dir), { recursive: true, force: true }));
  fs.cpSync(path.join(ROOT, 'test/fixtures/data-0.1.0/data'), dir, { recursive: true });
  fs.chmodSync(dir, 0o700);
  // without its credentials.json: the start finds the old owner and writes them again
  fs.rmSync(path.join(dir, 'credentials.json'));
  const d = await serveInProcess(['--data-dir', dir], { env: { APPREG_DELIVERY_LOG_RETENTION_DAYS: '36500' } });
  t.teardown(() => d.stop());
  t.ok(d.url, d.out.stderr.slice(-300));
  t.match(d.out.stderr, /credentials\.json for the workspace's owner owner@localhost/, 'credentials for the old owner');
  const who = JSON.parse((await runMain(['--data-dir', dir, 'whoami', '--json'])).stdout) as { email: string };
  t.equal(who.email, 'owner@localhost', 'the owner is who they were');
  t.equal(await cliLogin(must(d.url), dir, 'owner@localhost'), 'logged in', 'and logs in as before');
});
