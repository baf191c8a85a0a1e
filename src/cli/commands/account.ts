/** The account: appreg workspaces create|list, appreg users create, appreg login|logout|whoami. */
import type { Command } from 'commander';
import { fallbackAfterLogout, readSaved, resolveUrl, writeSaved } from '../../client/credentials.js';
import { kv, table } from '../output.js';
import { CliError, EXIT } from '../../client/exit.js';
import { action, examples } from '../options.js';
import type { Run } from '../run.js';
import type { Io } from '../../client/io.js';

async function readStdin(io: Io): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of io.stdin) chunks.push(typeof c === 'string' ? Buffer.from(c) : c);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/**
 * Whether the official CLI's login takes this address: a local part of letters, digits, `_`, `.` and `-`; a domain
 * of at least two dot-separated labels (letters, digits, `_`, `-`), the last of 2 to 4 characters.
 */
function officialCliTakes(email: string): boolean {
  const at = email.lastIndexOf('@');
  const labels = email.slice(at + 1).split('.');
  const tld = labels[labels.length - 1] ?? '';
  return (
    /^[\w.-]+$/.test(email.slice(0, at)) &&
    labels.length >= 2 &&
    labels.every((l) => /^[\w-]+$/.test(l)) &&
    tld.length >= 2 &&
    tld.length <= 4
  );
}

/** What login's options hold (--email is required). */
interface LoginOptions {
  email: string;
  password?: string;
  passwordStdin?: true;
  workspace?: string;
}

export function registerAccount(program: Command, run: Run): void {
  const ws = program.command('workspaces').description('workspaces of the logged-in user');
  ws.command('create <name>')
    .description('create a workspace; you become its first member')
    .addHelpText('after', examples('appreg workspaces create "Acme QA"'))
    .action(
      action(run, async ({ out, client }, name) => {
        const res = await client().request<{ id: string; name: string; workspaceUserId: string }>(
          'POST',
          '/workspaces',
          { json: { name } },
        );
        out.print(res, (c) =>
          kv(c, [
            ['workspace', res.id],
            ['name', res.name],
            ['your user', res.workspaceUserId],
          ]),
        );
      }),
    );
  ws.command('list')
    .description('list the workspaces you are a member of')
    .addHelpText('after', examples('appreg workspaces list --json'))
    .action(
      action(run, async ({ out, client }) => {
        const res = await client().request<{
          workspaces: Array<{ id: string; name: string; workspaceUserId: string }>;
        }>('GET', '/auth/whoami');
        out.print(res.workspaces, (c) =>
          table(
            c,
            ['ID', 'NAME', 'YOUR USER'],
            res.workspaces.map((w) => [w.id, w.name, w.workspaceUserId]),
          ),
        );
      }),
    );

  const users = program.command('users').description('workspace users');
  users
    .command('login-code')
    .description(
      'the pending code of an official-CLI login ("pumble-cli login" against appreg): yours, or as the workspace owner anyone\'s in your workspace',
    )
    .requiredOption('--email <email>', 'the email the login was started with')
    .addHelpText(
      'after',
      examples(
        'appreg users login-code --email dev@example.com',
        'appreg users login-code --email dev@example.com --json | jq -r .code',
      ),
    )
    .action(
      action(run, async ({ o, out, client: connect }) => {
        const client = connect();
        const res = await client.request<{ email: string; code: string; expiresAt: string; attemptsLeft: number }>(
          'GET',
          `${client.base()}/login-codes`,
          { searchParams: { email: String(o.email) } },
        );
        out.print(res, (c) =>
          kv(c, [
            ['email', res.email],
            ['code', c.bold(res.code)],
            ['expires', res.expiresAt],
            ['tries left', String(res.attemptsLeft)],
          ]),
        );
      }),
    );
  users
    .command('list')
    .description("the users of your workspace, the apps' bots included")
    .addHelpText('after', examples('appreg users list', 'appreg users list --json | jq -r ".[].email"'))
    .action(
      action(run, async ({ out, client: connect }) => {
        const client = connect();
        const list = await client.request<Array<{ id: string; name: string; email: string; isAddonBot?: boolean }>>(
          'GET',
          `${client.base()}/users`,
        );
        out.print(list, (c) =>
          table(
            c,
            ['ID', 'NAME', 'EMAIL', 'KIND'],
            list.map((u) => [u.id, u.name, u.email, u.isAddonBot ? 'app bot' : 'person']),
          ),
        );
      }),
    );
  users
    .command('create')
    .description('add a user to a workspace (a password is generated and shown once unless given)')
    .requiredOption('--workspace <id>', 'workspace id')
    .requiredOption('--email <email>', 'login email')
    .requiredOption('--name <name>', 'display name')
    .option('--password <password>', 'password (at least 8 characters); generated when omitted')
    .addHelpText('after', examples('appreg users create --workspace ws_123 --email dev@example.com --name "Dev"'))
    .action(
      action(run, async ({ o, out, client }) => {
        const res = await client().request<{ id: string; email: string; password?: string; existingAccount?: boolean }>(
          'POST',
          `/workspaces/${encodeURIComponent(String(o.workspace))}/workspaceUsers`,
          {
            json: { email: o.email, name: o.name, password: o.password },
          },
        );
        if (!officialCliTakes(res.email))
          out.warn(
            `the official CLI (pumble-cli login) refuses ${res.email}: it wants a dotted domain ending in 2 to 4 letters, such as ${res.email.split('@')[0]}@example.com`,
          );
        const existing = res.existingAccount
          ? `existing login kept${o.password ? ' (the --password given was not used)' : ''}`
          : undefined;
        out.print(res, (c) =>
          kv(c, [
            ['user', res.id],
            ['email', res.email],
            ['password', res.password ? `${res.password}  (shown once)` : existing],
          ]),
        );
      }),
    );

  program
    .command('login')
    .description('log in with email and password; the management token is stored 0600 in your config directory')
    .requiredOption('--email <email>', 'login email')
    .option('--password <password>', 'password (or APPREG_PASSWORD, or --password-stdin)')
    .option('--password-stdin', 'read the password from standard input')
    .option('--workspace <id>', 'workspace to act in, when the account is in several')
    .addHelpText(
      'after',
      examples(
        'appreg login --email dev@example.com --password-stdin < pw.txt',
        'APPREG_PASSWORD=… appreg login --email dev@example.com --workspace ws_123',
      ),
    )
    .action(
      action<LoginOptions>(run, async ({ o, out, client: connect }) => {
        const password = o.passwordStdin ? await readStdin(run.io) : (o.password ?? run.io.env.APPREG_PASSWORD);
        if (!password)
          throw new CliError('a password is required: --password, --password-stdin or APPREG_PASSWORD', EXIT.usage);
        const client = connect({ auth: false });
        const res = await client.request<{
          authToken: string;
          exp: number;
          workspaceId: string;
          workspaceUserId: string;
        }>('POST', '/auth/login', {
          auth: false,
          json: { email: o.email, password, workspaceId: o.workspace },
        });
        const saved = readSaved(run.io);
        saved[client.url] = {
          workspaceId: res.workspaceId,
          workspaceUserId: res.workspaceUserId,
          email: o.email,
          authToken: res.authToken,
        };
        writeSaved(run.io, saved);
        const summary = {
          url: client.url,
          workspaceId: res.workspaceId,
          workspaceUserId: res.workspaceUserId,
          expiresAt: new Date(res.exp * 1000).toISOString(),
        };
        out.print(
          summary,
          (c) =>
            `logged in to ${c.bold(client.url)} as ${o.email} (workspace ${res.workspaceId}, token valid until ${summary.expiresAt})`,
        );
      }),
    );

  program
    .command('logout')
    .description('revoke the stored management token and forget it')
    .addHelpText('after', examples('appreg logout'))
    .action(
      action(run, async ({ o, out, client }) => {
        const url = resolveUrl(run.io, o);
        const saved = readSaved(run.io);
        if (!saved[url]) throw new CliError(`not logged in to ${url}`, EXIT.usage);
        try {
          await client().request('POST', '/auth/logout');
        } catch (e) {
          if (!(e instanceof CliError) || e.exitCode !== EXIT.rejected) throw e; // already invalid: forget it anyway
        }
        delete saved[url];
        writeSaved(run.io, saved);
        // Say what the next command acts as: a --token, the data dir's owner, or nothing.
        const next = fallbackAfterLogout(run.io, o, url);
        out.print({ loggedOut: url, next }, () => `logged out of ${url}; ${next}`);
      }),
    );

  program
    .command('whoami')
    .description('show the user and workspace the CLI acts as')
    .addHelpText('after', examples('appreg whoami', 'appreg whoami --json'))
    .action(
      action(run, async ({ out, client }) => {
        const res = await client().request<{
          workspaceId: string;
          workspaceUserId: string;
          name?: string;
          email?: string;
          workspaces?: Array<{ id: string; name: string }>;
        }>('GET', '/auth/whoami');
        const ws = res.workspaces?.find((w) => w.id === res.workspaceId);
        out.print(res, (c) =>
          kv(c, [
            ['name', res.name],
            ['email', res.email],
            ['user', res.workspaceUserId],
            ['workspace', ws ? `${ws.name} (${res.workspaceId})` : res.workspaceId],
            [
              'other workspaces',
              res.workspaces && res.workspaces.length > 1
                ? res.workspaces
                    .filter((w) => w.id !== res.workspaceId)
                    .map((w) => `${w.name} (${w.id})`)
                    .join(', ')
                : undefined,
            ],
          ]),
        );
      }),
    );
}
