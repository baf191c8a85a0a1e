/**
 * appreg authorize and appreg authorizations list: the authorization flow from a terminal or CI. (`apps uninstall` is
 * in apps.ts.)
 */
import type { Command } from 'commander';
import { kv, table } from '../output.js';
import { CliError, EXIT, refusalCode } from '../../client/exit.js';
import { action, examples } from '../options.js';
import type { Run } from '../run.js';
import type { Client } from '../../client/daemon-client.js';
import { must } from '../../must.js';

interface AppWithSecrets {
  id: string;
  redirectUrls?: string[];
  scopes?: { userScopes?: string[]; botScopes?: string[] };
  bot?: boolean;
  clientSecret?: string;
}
interface Authorization {
  app: { id: string; name?: string; displayName?: string };
  workspaceId: string;
  userScopes: string[];
  botScopes: string[];
  botId?: string;
  updatedAt?: string;
}

/** The consent screen's `scopes`: user scopes, then bot scopes prefixed with `bot:`. */
function scopesParam(app: AppWithSecrets): string {
  const u = app.scopes?.userScopes ?? [];
  const b = app.bot === false ? [] : (app.scopes?.botScopes ?? []);
  return [...u, ...b.map((s) => `bot:${s}`)].join(',');
}

/**
 * Whether any app has this id (not only yours): the consent link's check answers unknown_client
 * for an unknown clientId before it looks at anything else.
 */
async function appExists(client: Client, appId: string): Promise<boolean> {
  try {
    await client.request('GET', `${client.base()}/oauth2/consent-url`, { searchParams: { clientId: appId } });
    return true;
  } catch (e) {
    if (!(e instanceof CliError) || e.exitCode !== EXIT.rejected) throw e;
    return refusalCode(e) !== 'unknown_client';
  }
}

/** What authorize's options hold, as commander parses them. */
interface AuthorizeOptions {
  scopes?: string;
  redirectUrl?: string;
  reinstall?: true;
  workspace?: string;
  state?: string;
  printUrl?: true;
  follow?: true;
  exchange?: true;
  clientSecret?: string;
}

type Page = { ok: true; status: number; location?: string; body: string } | { ok: false; error: string };

/** After the app's code was exchanged, how long its redirect page still has to answer. */
const PAGE_GRACE_MS = 2000;
const POLL_MS = 200;

/**
 * `--follow`: send the browser's redirect (with the code) to the running app, and meanwhile ask the
 * daemon whether the app exchanged the code. A page that never answers does not hide an exchange
 * that happened: once the code is exchanged, the page gets PAGE_GRACE_MS more.
 */
async function follow(
  client: Client,
  granted: { code: string; redirectUrl: string },
): Promise<{ page: Page; exchanged: boolean }> {
  let page: Page | undefined;
  const visit = client.visitApp(granted.redirectUrl).then(
    (r): Page => ({ ok: true, ...r }),
    (e: unknown): Page => {
      if (e instanceof CliError) return { ok: false, error: e.message };
      throw e;
    },
  );
  void visit.then(
    (p) => (page = p),
    () => undefined,
  );
  const exchanged = async () =>
    (
      await client.request<{ state: string }>('POST', `${client.base()}/oauth2/code-state`, {
        json: { code: granted.code },
      })
    ).state === 'exchanged';
  let since: number | undefined;
  while (!page) {
    await Promise.race([visit, new Promise((r) => setTimeout(r, POLL_MS))]);
    if (page) break;
    if (since === undefined && (await exchanged())) since = Date.now();
    if (since !== undefined && Date.now() - since >= PAGE_GRACE_MS)
      return {
        page: { ok: false, error: `nothing within ${PAGE_GRACE_MS / 1000} s of the exchange` },
        exchanged: true,
      };
  }
  return { page: await visit, exchanged: since !== undefined || (await exchanged()) };
}

export function registerAuthorize(program: Command, run: Run): void {
  program
    .command('authorize <appId>')
    .description(
      'authorize an app as the logged-in user (what clicking Allow on the consent screen does), or print its consent link',
    )
    .option(
      '--scopes <list>',
      "comma-separated user scopes then bot:-prefixed bot scopes (default: every scope in your app's manifest)",
    )
    .option(
      '--redirect-url <url>',
      "redirect URL, absolute or a path such as /redirect (default: the manifest's first)",
    )
    .option('--reinstall', 'reinstall: mint a new bot token (the old one stops working) and grant new bot scopes')
    .option('--workspace <id>', 'workspace to authorize in (default: the one you are logged in to)')
    .option('--state <value>', 'opaque value returned next to the code')
    .option('--print-url', 'only print the consent-screen URL to open in a browser')
    .option(
      '--follow',
      'send the redirect (with the code) to the running app, which exchanges it itself; print what the app answered',
    )
    .option('--exchange', "exchange the code for tokens with the app's client secret and print them")
    .option('--client-secret <secret>', 'client secret for --exchange when the app is not yours [APPREG_CLIENT_SECRET]')
    .addHelpText(
      'after',
      `
Examples:
  $ appreg authorize app_123 --print-url                       consent link for a browser
  $ appreg authorize app_123 --follow                          the running app receives the code and exchanges it
  $ appreg authorize app_123 --exchange --json                 tokens for scripts (accessToken, botToken, …)
  $ appreg authorize app_123 --reinstall --exchange            new bot token; the previous one stops working
  $ appreg authorize app_123 --scopes messages:read,bot:messages:write --redirect-url /redirect`,
    )
    .action(
      action<AuthorizeOptions>(run, async (x, appId) => {
        const { o, out } = x;
        const env = run.io.env;
        const modes = [o.printUrl, o.follow, o.exchange].filter(Boolean);
        if (modes.length > 1) throw new CliError('choose one of --print-url, --follow and --exchange', EXIT.usage);
        const client = x.client();
        // own app: defaults and the client secret come from its manifest; anyone else's: give
        // --scopes and --redirect-url
        let app: AppWithSecrets | undefined;
        if (!o.scopes || !o.redirectUrl || (o.exchange && !o.clientSecret && !env.APPREG_CLIENT_SECRET)) {
          try {
            app = await client.request<AppWithSecrets>(
              'GET',
              `${client.base()}/apps/mine/${encodeURIComponent(appId)}`,
            );
          } catch (e) {
            if (!(e instanceof CliError) || e.exitCode !== EXIT.rejected) throw e;
            if (!(await appExists(client, appId)))
              throw new CliError(`app ${appId} not found`, EXIT.rejected, {
                code: 'not_found',
                message: `app ${appId} not found`,
              });
            throw new CliError(
              `${appId} is not one of your apps: give --scopes and --redirect-url${o.exchange ? ' and --client-secret' : ''}`,
              EXIT.usage,
            );
          }
        }
        const redirectUrl = o.redirectUrl ?? app?.redirectUrls?.[0];
        if (!redirectUrl) throw new CliError('the app has no redirect URL; give --redirect-url', EXIT.usage);
        const params: Record<string, string> = {
          clientId: appId,
          scopes: o.scopes ?? scopesParam(must(app)),
          redirectUrl,
        };
        if (o.reinstall) params.isReinstall = 'true';
        if (o.state) params.state = o.state;
        const workspace = o.workspace;

        if (o.printUrl) {
          if (workspace) params.defaultWorkspaceId = workspace;
          const { url } = await client.request<{ url: string }>('GET', `${client.base()}/oauth2/consent-url`, {
            searchParams: params,
          });
          return out.print({ url }, () => url);
        }
        // another workspace of the same login: the daemon checks the membership (403 otherwise)
        if (workspace && workspace !== must(client.creds).workspaceId) params.workspaceId = workspace;
        const granted = await client.request<{ code: string; redirectUrl: string }>(
          'GET',
          `${client.base()}/oauth2/grant`,
          { searchParams: params },
        );

        if (o.follow) {
          const r = await follow(client, granted);
          const rows: Array<[string, unknown]> = r.page.ok
            ? [
                ['app answered', String(r.page.status)],
                ['location', r.page.location],
                ['body', r.page.body],
              ]
            : [['app answered', `nothing (${r.page.error})`]];
          rows.push(['code', r.exchanged ? 'exchanged by the app' : 'not exchanged']);
          const data = r.page.ok
            ? { status: r.page.status, location: r.page.location, body: r.page.body, codeExchanged: r.exchanged }
            : { status: null, error: r.page.error, codeExchanged: r.exchanged };
          if (!r.page.ok && !r.exchanged) throw new CliError(r.page.error, EXIT.rejected);
          out.print(data, (c) => kv(c, rows));
          if (!r.page.ok)
            out.warn(`the app exchanged the code, but its redirect page did not answer (${r.page.error})`);
          else if (r.page.status >= 400)
            throw new CliError(`the app answered ${r.page.status}`, EXIT.rejected, { quiet: true });
          else if (!r.exchanged)
            out.warn('the app answered, but has not exchanged the code (yet): check its redirect URL handler');
          return;
        }
        if (o.exchange) {
          const secret = o.clientSecret ?? env.APPREG_CLIENT_SECRET ?? app?.clientSecret;
          if (!secret) throw new CliError('no client secret: give --client-secret', EXIT.usage);
          const tokens = await client.request<Record<string, unknown>>('POST', '/oauth2/access', {
            auth: false,
            form: { 'client-id': appId, 'client-secret': secret, code: granted.code },
          });
          return out.print(tokens, (c) =>
            kv(
              c,
              Object.entries(tokens).map(([k, v]): [string, unknown] => [k, String(v)]),
            ),
          );
        }
        out.print(
          granted,
          (c) =>
            kv(c, [
              ['code', granted.code],
              ['redirectUrl', granted.redirectUrl],
            ]) +
            '\n' +
            c.dim('exchange the code within the code lifetime, or rerun with --follow / --exchange'),
        );
      }),
    );

  const authorizations = program.command('authorizations').description('apps you have authorized');
  authorizations
    .command('list')
    .description('list the apps you have authorized, with the scopes granted')
    .addHelpText(
      'after',
      examples('appreg authorizations list', 'appreg authorizations list --json | jq -r ".[].app.id"'),
    )
    .action(
      action(run, async ({ out, client: connect }) => {
        const client = connect();
        const list = await client.request<Authorization[]>('GET', `${client.base()}/apps/authorizations`);
        out.print(list, (c) =>
          table(
            c,
            ['APP ID', 'NAME', 'WORKSPACE', 'USER SCOPES', 'BOT SCOPES'],
            list.map((a) => [
              a.app.id,
              a.app.displayName ?? a.app.name ?? '',
              a.workspaceId,
              a.userScopes.join(','),
              a.botScopes.join(','),
            ]),
          ),
        );
      }),
    );
}
