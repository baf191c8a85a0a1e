/** workspaces, users, login, logout, whoami. */
import type { Command } from 'commander';
import { createClient, readSaved, resolveUrl, writeSaved, type GlobalOpts } from '../client.js';
import { CliError, EXIT, createOut, kv, table } from '../output.js';

const g = (cmd: Command) => cmd.optsWithGlobals() as GlobalOpts & Record<string, unknown>;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

export function registerAccount(program: Command): void {
  const ws = program.command('workspaces').description('workspaces of the logged-in user');
  ws.command('create <name>')
    .description('create a workspace; you become its first member')
    .addHelpText('after', '\nExample:\n  $ appreg workspaces create "Acme QA"')
    .action(async (name: string, _o, cmd: Command) => {
      const o = g(cmd);
      const client = createClient(o);
      const res = await client.request<{ id: string; name: string; workspaceUserId: string }>('POST', '/workspaces', { json: { name } });
      createOut(o).print(res, (c) => kv(c, [['workspace', res.id], ['name', res.name], ['your user', res.workspaceUserId]]));
    });
  ws.command('list')
    .description('list the workspaces you are a member of')
    .addHelpText('after', '\nExample:\n  $ appreg workspaces list --json')
    .action(async (_o, cmd: Command) => {
      const o = g(cmd);
      const res = await createClient(o).request<{ workspaces: Array<{ id: string; name: string; workspaceUserId: string }> }>('GET', '/auth/whoami');
      createOut(o).print(res.workspaces, (c) => table(c, ['ID', 'NAME', 'YOUR USER'], res.workspaces.map((w) => [w.id, w.name, w.workspaceUserId])));
    });

  program
    .command('users')
    .description('workspace users')
    .command('create')
    .description('add a user to a workspace (a password is generated and shown once unless given)')
    .requiredOption('--workspace <id>', 'workspace id')
    .requiredOption('--email <email>', 'login email')
    .requiredOption('--name <name>', 'display name')
    .option('--password <password>', 'password (at least 8 characters); generated when omitted')
    .addHelpText('after', '\nExample:\n  $ appreg users create --workspace ws_123 --email dev@example.com --name "Dev"')
    .action(async (_o, cmd: Command) => {
      const o = g(cmd);
      const client = createClient(o);
      const res = await client.request<{ id: string; email: string; password?: string; existingAccount?: boolean }>('POST', `/workspaces/${encodeURIComponent(String(o.workspace))}/workspaceUsers`, {
        json: { email: o.email, name: o.name, password: o.password },
      });
      const existing = res.existingAccount ? `existing login kept${o.password ? ' (the --password given was not used)' : ''}` : undefined;
      createOut(o).print(res, (c) => kv(c, [['user', res.id], ['email', res.email], ['password', res.password ? `${res.password}  (shown once)` : existing]]));
    });

  program
    .command('login')
    .description('log in with email and password; the management token is stored 0600 in your config directory')
    .requiredOption('--email <email>', 'login email')
    .option('--password <password>', 'password (or APPREG_PASSWORD, or --password-stdin)')
    .option('--password-stdin', 'read the password from standard input')
    .option('--workspace <id>', 'workspace to act in, when the account is in several')
    .addHelpText('after', '\nExamples:\n  $ appreg login --email dev@example.com --password-stdin < pw.txt\n  $ APPREG_PASSWORD=… appreg login --email dev@example.com --workspace ws_123')
    .action(async (_o, cmd: Command) => {
      const o = g(cmd);
      const password = o.passwordStdin ? await readStdin() : ((o.password as string | undefined) ?? process.env.APPREG_PASSWORD);
      if (!password) throw new CliError('a password is required: --password, --password-stdin or APPREG_PASSWORD', EXIT.usage);
      const client = createClient(o, { auth: false });
      const res = await client.request<{ authToken: string; exp: number; workspaceId: string; workspaceUserId: string }>('POST', '/auth/login', {
        auth: false,
        json: { email: o.email, password, workspaceId: o.workspace },
      });
      const saved = readSaved();
      saved[client.url] = { workspaceId: res.workspaceId, workspaceUserId: res.workspaceUserId, email: String(o.email), authToken: res.authToken };
      writeSaved(saved);
      const summary = { url: client.url, workspaceId: res.workspaceId, workspaceUserId: res.workspaceUserId, expiresAt: new Date(res.exp * 1000).toISOString() };
      createOut(o).print(summary, (c) => `logged in to ${c.bold(client.url)} as ${o.email} (workspace ${res.workspaceId}, token valid until ${summary.expiresAt})`);
    });

  program
    .command('logout')
    .description('revoke the stored management token and forget it')
    .addHelpText('after', '\nExample:\n  $ appreg logout')
    .action(async (_o, cmd: Command) => {
      const o = g(cmd);
      const url = resolveUrl(o);
      const saved = readSaved();
      if (!saved[url]) throw new CliError(`not logged in to ${url}`, EXIT.usage);
      try {
        await createClient(o).request('POST', '/auth/logout');
      } catch (e) {
        if (!(e instanceof CliError) || e.exitCode !== EXIT.rejected) throw e; // already invalid: forget it anyway
      }
      delete saved[url];
      writeSaved(saved);
      createOut(o).print({ loggedOut: url }, () => `logged out of ${url}`);
    });

  program
    .command('whoami')
    .description('show the user and workspace the CLI acts as')
    .addHelpText('after', '\nExamples:\n  $ appreg whoami\n  $ appreg whoami --json')
    .action(async (_o, cmd: Command) => {
      const o = g(cmd);
      const res = await createClient(o).request<{ workspaceId: string; workspaceUserId: string }>('GET', '/auth/whoami');
      createOut(o).print(res, (c) => kv(c, [['workspace', res.workspaceId], ['user', res.workspaceUserId]]));
    });
}
