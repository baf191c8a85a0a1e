/** appreg authorize / authorizations / apps uninstall: the authorization flow from a terminal or CI. */
import type { Command } from 'commander';
import { createClient, type GlobalOpts } from '../client.js';
import { CliError, EXIT, createOut, kv, table } from '../output.js';

const g = (cmd: Command) => cmd.optsWithGlobals() as GlobalOpts & Record<string, unknown>;

interface AppWithSecrets { id: string; redirectUrls?: string[]; scopes?: { userScopes?: string[]; botScopes?: string[] }; bot?: boolean; clientSecret?: string }
interface Authorization { app: { id: string; name?: string; displayName?: string }; workspaceId: string; userScopes: string[]; botScopes: string[]; botId?: string; updatedAt?: string }

/** The consent screen's `scopes`: user scopes, then bot scopes prefixed with `bot:`. */
export function scopesParam(app: AppWithSecrets): string {
  const u = app.scopes?.userScopes ?? [];
  const b = app.bot === false ? [] : app.scopes?.botScopes ?? [];
  return [...u, ...b.map((s) => `bot:${s}`)].join(',');
}

async function postForm(url: string, parts: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const form = new FormData();
  for (const [k, v] of Object.entries(parts)) form.append(k, v);
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', body: form, signal: AbortSignal.timeout(30_000) });
  } catch (e) {
    throw new CliError(`cannot reach the daemon at ${new URL(url).origin}: ${(e as Error).message}`, EXIT.unreachable);
  }
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text);
  } catch {
    body = { message: text.slice(0, 500) };
  }
  return { status: res.status, body };
}

export function registerAuthorize(program: Command): void {
  program
    .command('authorize <appId>')
    .description('authorize an app as the logged-in user (what clicking Allow on the consent screen does), or print its consent link')
    .option('--scopes <list>', 'comma-separated user scopes then bot:-prefixed bot scopes (default: every scope in your app\'s manifest)')
    .option('--redirect-url <url>', 'redirect URL, absolute or a path such as /redirect (default: the manifest\'s first)')
    .option('--reinstall', 'reinstall: mint a new bot token (the old one stops working) and grant new bot scopes')
    .option('--workspace <id>', 'workspace to authorize in (default: the one you are logged in to)')
    .option('--state <value>', 'opaque value returned next to the code')
    .option('--print-url', 'only print the consent-screen URL to open in a browser')
    .option('--follow', 'send the redirect (with the code) to the running app, which exchanges it itself; print what the app answered')
    .option('--exchange', 'exchange the code for tokens with the app\'s client secret and print them')
    .option('--client-secret <secret>', 'client secret for --exchange when the app is not yours [APPREG_CLIENT_SECRET]')
    .addHelpText('after', `
Examples:
  $ appreg authorize app_123 --print-url                       consent link for a browser
  $ appreg authorize app_123 --follow                          the running app receives the code and exchanges it
  $ appreg authorize app_123 --exchange --json                 tokens for scripts (accessToken, botToken, …)
  $ appreg authorize app_123 --reinstall --exchange            new bot token; the previous one stops working
  $ appreg authorize app_123 --scopes messages:read,bot:messages:write --redirect-url /redirect`)
    .action(async (appId: string, _o, cmd: Command) => {
      const o = g(cmd);
      const out = createOut(o);
      const modes = ['printUrl', 'follow', 'exchange'].filter((k) => o[k]);
      if (modes.length > 1) throw new CliError('choose one of --print-url, --follow and --exchange', EXIT.usage);
      const client = createClient(o);
      // own app: defaults and the client secret come from its manifest; anyone else's: give --scopes and --redirect-url
      let app: AppWithSecrets | undefined;
      if (!o.scopes || !o.redirectUrl || (o.exchange && !o.clientSecret && !process.env.APPREG_CLIENT_SECRET)) {
        try {
          app = await client.request<AppWithSecrets>('GET', `${client.base()}/apps/mine/${encodeURIComponent(appId)}`);
        } catch (e) {
          if (!(e instanceof CliError) || e.exitCode !== EXIT.rejected) throw e;
          throw new CliError(`${appId} is not one of your apps: give --scopes and --redirect-url${o.exchange ? ' and --client-secret' : ''}`, EXIT.usage);
        }
      }
      const redirectUrl = (o.redirectUrl as string | undefined) ?? app?.redirectUrls?.[0];
      if (!redirectUrl) throw new CliError('the app has no redirect URL; give --redirect-url', EXIT.usage);
      const params: Record<string, string> = { clientId: appId, scopes: (o.scopes as string | undefined) ?? scopesParam(app!), redirectUrl };
      if (o.reinstall) params.isReinstall = 'true';
      if (o.state) params.state = String(o.state);
      const workspace = o.workspace as string | undefined;

      if (o.printUrl) {
        if (workspace) params.defaultWorkspaceId = workspace;
        const { url } = await client.request<{ url: string }>('GET', `${client.base()}/oauth2/consent-url`, { searchParams: params });
        return out.print({ url }, () => url);
      }
      // another workspace of the same login: the daemon checks the membership (403 otherwise)
      if (workspace && workspace !== client.creds!.workspaceId) params.workspaceId = workspace;
      const granted = await client.request<{ code: string; redirectUrl: string }>('GET', `${client.base()}/oauth2/grant`, { searchParams: params });

      if (o.follow) {
        let res: Response;
        try {
          res = await fetch(granted.redirectUrl, { redirect: 'manual', signal: AbortSignal.timeout(15_000) });
        } catch (e) {
          throw new CliError(`the app at ${new URL(granted.redirectUrl).origin} did not answer: ${(e as Error).message}. Is it running?`, EXIT.rejected);
        }
        const text = (await res.text()).slice(0, 4000);
        const result = { status: res.status, location: res.headers.get('location') ?? undefined, body: text };
        out.print(result, (c) => kv(c, [['app answered', String(res.status)], ['location', result.location], ['body', text]]));
        if (res.status >= 400) throw new CliError(`the app answered ${res.status}`, EXIT.rejected, { quiet: true });
        return;
      }
      if (o.exchange) {
        const secret = (o.clientSecret as string | undefined) ?? process.env.APPREG_CLIENT_SECRET ?? app?.clientSecret;
        if (!secret) throw new CliError('no client secret: give --client-secret', EXIT.usage);
        const x = await postForm(`${client.url}/oauth2/access`, { 'client-id': appId, 'client-secret': secret, code: granted.code });
        if (x.status !== 200) throw new CliError(`${String(x.body.message ?? `the daemon answered ${x.status}`)} (${String(x.body.code ?? x.status)})`, x.status >= 500 ? EXIT.daemonError : EXIT.rejected, x.body);
        return out.print(x.body, (c) => kv(c, Object.entries(x.body).map(([k, v]) => [k, String(v)] as [string, unknown])));
      }
      out.print(granted, (c) => kv(c, [['code', granted.code], ['redirectUrl', granted.redirectUrl]]) + '\n' + c.dim('exchange the code within the code lifetime, or rerun with --follow / --exchange'));
    });

  const authorizations = program.command('authorizations').description('apps you have authorized');
  authorizations
    .command('list')
    .description('list the apps you have authorized, with the scopes granted')
    .addHelpText('after', '\nExamples:\n  $ appreg authorizations list\n  $ appreg authorizations list --json | jq -r ".[].app.id"')
    .action(async (_o, cmd: Command) => {
      const o = g(cmd);
      const client = createClient(o);
      const list = await client.request<Authorization[]>('GET', `${client.base()}/apps/authorizations`);
      createOut(o).print(list, (c) =>
        table(c, ['APP ID', 'NAME', 'WORKSPACE', 'USER SCOPES', 'BOT SCOPES'], list.map((a) => [a.app.id, a.app.displayName ?? a.app.name ?? '', a.workspaceId, a.userScopes.join(','), a.botScopes.join(',')])),
      );
    });

  registerAppsUninstall(program);
}

/** Adds `apps uninstall` to the existing `apps` command group (registered by commands/apps.ts). */
export function registerAppsUninstall(program: Command): void {
  const apps = program.commands.find((c) => c.name() === 'apps');
  if (!apps) return;
  apps
    .command('uninstall <appId>')
    .description('uninstall an app from a workspace: every token of the app there stops working; APP_UNINSTALLED is sent')
    .option('--workspace <id>', 'workspace to uninstall from (default: the one you are logged in to)')
    .addHelpText('after', '\nExamples:\n  $ appreg apps uninstall app_123\n  $ appreg apps uninstall app_123 --workspace ws_456 --json')
    .action(async (appId: string, _o, cmd: Command) => {
      const o = g(cmd);
      const client = createClient(o);
      const ws = (o.workspace as string | undefined) ?? client.creds!.workspaceId;
      await client.request('DELETE', `${client.base()}/apps/${encodeURIComponent(appId)}/installations/${encodeURIComponent(ws)}`);
      createOut(o).print({ uninstalled: appId, workspaceId: ws }, () => `uninstalled ${appId} from ${ws}`);
    });
}
