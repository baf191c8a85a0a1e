/** appreg apps …: register and manage apps by manifest, from a file or from the app's own host. */
import type { IncomingHttpHeaders } from 'node:http';
import type { Command } from 'commander';
import { kv, padDisplay, table, type Out } from '../output.js';
import { CliError, EXIT } from '../../client/exit.js';
import { action, examples, readJsonFile } from '../options.js';
import { envOutOptions, envOutTarget, tryWriteEnvFile, type EnvSource } from '../env-file.js';
import type { Client } from '../../client/daemon-client.js';
import type { Run } from '../run.js';
import { registerAppsInit } from './apps-init.js';
import { must } from '../../must.js';
import { recordOr } from '../../unknown-values.js';

/** An app as the daemon answers it (docs/http-api.md): the fields read here, and the rest as it came. */
type App = Record<string, unknown> & {
  id: string;
  name?: string;
  displayName?: string;
  published?: boolean;
  clientSecret?: string;
  appKey?: string;
  signingSecret?: string;
  socketMode?: boolean;
  eventSubscriptions?: { url?: string; events?: string[] };
  scopes?: { botScopes?: string[]; userScopes?: string[] };
  blockInteraction?: Url | null;
  viewAction?: Url | null;
  dynamicMenus?: Menu[];
  slashCommands?: Slash[];
  shortcuts?: Shortcut[];
  redirectUrls?: string[];
};
const SECRET_FIELDS = ['clientSecret', 'appKey', 'signingSecret'] as const;
const appPath = (client: Client, appId: string, rest = '') =>
  `${client.base()}/apps/${encodeURIComponent(appId)}${rest}`;

function secretsHidden(app: App): App {
  const copy = { ...app };
  for (const k of SECRET_FIELDS) delete copy[k];
  return copy;
}

// The human view of an app for `apps get`: everything the manifest routes (URLs, commands, shortcuts, scopes,
// redirects).
type C = Out['c'];
interface Url {
  url?: string;
}
interface Shortcut extends Url {
  name?: string;
  shortcutType?: string;
}
interface Slash extends Url {
  command?: string;
  usageHint?: string | null;
}
interface Menu extends Url {
  onAction?: string;
}

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** A titled section of indented lines; "(none)" when empty. */
function section(c: C, title: string, lines: string[]): string {
  return `${c.bold(title)}\n${lines.length ? lines.map((l) => `  ${l}`).join('\n') : `  ${c.dim('(none)')}`}`;
}

/** The routing part of an app, below its summary. */
function appDetails(c: C, app: App): string {
  const socket = app.socketMode === true;
  const arrow = (url: string | undefined) => (socket ? c.dim('(socket mode)') : url || c.dim('(no URL)'));
  const ev = app.eventSubscriptions ?? {};
  const scopes = app.scopes ?? {};
  const urls: string[] = [];
  if (ev.events?.length || ev.url)
    urls.push(`events            ${arrow(ev.url)}  ${c.dim((ev.events ?? []).join(', ') || '(no events)')}`);
  for (const [k, label] of [
    ['blockInteraction', 'block interaction'],
    ['viewAction', 'view action'],
  ] as const) {
    const v = app[k];
    if (v?.url) urls.push(`${padDisplay(label, 18)}${arrow(v.url)}`);
  }
  for (const m of app.dynamicMenus ?? []) urls.push(`${padDisplay(`menu ${m.onAction ?? ''}`, 18)}${arrow(m.url)}`);
  for (const k of ['helpUrl', 'avatarUrl', 'listingUrl'] as const)
    if (typeof app[k] === 'string') urls.push(`${padDisplay(k, 18)}${String(app[k])}`);
  return [
    section(c, 'URLs', urls),
    section(
      c,
      'slash commands',
      (app.slashCommands ?? []).map(
        (s) => `${s.command ?? ''}${s.usageHint ? ` ${s.usageHint}` : ''}  ${arrow(s.url)}`,
      ),
    ),
    section(
      c,
      'shortcuts',
      (app.shortcuts ?? []).map(
        (s) => `${s.name ?? ''} (${s.shortcutType === 'ON_MESSAGE' ? 'message' : 'global'})  ${arrow(s.url)}`,
      ),
    ),
    section(c, 'scopes', [
      `bot:  ${(scopes.botScopes ?? []).join(', ') || c.dim('(none)')}`,
      `user: ${(scopes.userScopes ?? []).join(', ') || c.dim('(none)')}`,
    ]),
    section(c, 'redirect URLs', list(app.redirectUrls).map(String)),
  ].join('\n');
}

function summary(c: Out['c'], app: App, withSecrets: boolean): string {
  const rows: Array<[string, unknown]> = [
    ['id', app.id],
    ['name', app.name],
    ['displayName', app.displayName],
    ['published', String(app.published ?? false)],
  ];
  if (app.connections !== undefined) rows.push(['connections', String(app.connections)]);
  if (withSecrets) for (const k of SECRET_FIELDS) rows.push([k, app[k]]);
  return kv(c, rows);
}

/** The daemon's manifest warnings (X-Appreg-Warnings) as warning lines on stderr. */
const warningsTo = (out: Out) => (headers: IncomingHttpHeaders) => {
  const header = headers['x-appreg-warnings'];
  if (typeof header !== 'string') return;
  try {
    const warnings: unknown = JSON.parse(header);
    for (const w of Array.isArray(warnings) ? warnings : [])
      out.warn(`${String(recordOr(w)?.pointer)}: ${String(recordOr(w)?.message)}`);
  } catch {
    /* ignore */
  }
};

/** `apps create --from-url` and `apps sync`: the daemon fetches <APP_HOST_URL>/manifest and validates it. */
function appFromUrl(
  client: Client,
  url: string,
  appId?: string,
  onHeaders?: (h: IncomingHttpHeaders) => void,
): Promise<App> {
  return client.request<App>('POST', `${client.base()}/apps/from-url`, {
    json: appId ? { url, appId } : { url },
    timeoutMs: 60_000,
    onHeaders,
  });
}

/** Your apps whose manifest name is the one of `manifest` (the name is what `say` and the console show). */
async function sameName(client: Client, manifest: unknown): Promise<App[]> {
  const name = recordOr(manifest)?.name;
  if (typeof name !== 'string') return [];
  return (await client.request<App[]>('GET', `${client.base()}/apps/mine`)).filter((a) => a.name === name);
}

/** The app with its secrets (for an env file after an update, which answers without them). */
const withSecrets = (client: Client, appId: string) =>
  client.request<App>('GET', `${client.base()}/apps/mine/${encodeURIComponent(appId)}`);

function writeEnvOrFail(run: Run, envOut: string, app: App, apiUrl: string, done: string, from: EnvSource): void {
  const envError = tryWriteEnvFile(run.io, envOut, app, apiUrl, from);
  if (envError) throw new CliError(`the app ${app.id} was ${done}, but ${envError}`, EXIT.usage);
}

/**
 * A new app with its secrets (shown only now), and the env file; the secrets are printed even when the file cannot be
 * written.
 */
function printCreated(run: Run, out: Out, app: App, envOut: string | undefined, apiUrl: string, from: EnvSource): void {
  const envError = envOut ? tryWriteEnvFile(run.io, envOut, app, apiUrl, from) : undefined;
  out.print(
    app,
    (c) =>
      (app.action ? `created ${app.id} (${app.name})\n` : '') +
      summary(c, app, true) +
      (envOut && !envError ? `\n${c.dim(`secrets written to ${envOut}`)}` : ''),
  );
  if (envError) throw new CliError(`the app ${app.id} was created (secrets above), but ${envError}`, EXIT.usage);
}

/** What --file and --from-url say about where the app is, for its env file. */
const envSource = (o: Record<string, unknown>): EnvSource => ({
  hostUrl: o.fromUrl === undefined ? undefined : String(o.fromUrl),
  manifestFile: o.file === undefined ? undefined : String(o.file),
});

export function registerApps(program: Command, run: Run): void {
  const apps = program
    .command('apps')
    .description('register and manage apps by manifest: init, validate, create, sync, …');
  // First what a newcomer does first: a starter manifest, then checking it.
  registerAppsInit(apps, run);

  apps
    .command('validate')
    .description('check a manifest offline against the same schema the daemon uses')
    .requiredOption('--file <manifest.json>', 'manifest file')
    .option(
      '--allow-insecure-redirects',
      'accept http: redirect URLs on non-local hosts, as a daemon started with that option does',
    )
    .addHelpText(
      'after',
      `
Exit codes: 0 valid (warnings on stderr); 7 not a valid manifest, or not JSON ({"error":{"code":"invalid_manifest","details":[…]}} with --json); 2 the file cannot be read.
${examples('appreg apps validate --file manifest.json && echo ok', 'appreg apps validate --file manifest.json --json')}`,
    )
    .action(
      action(run, async ({ o, out }) => {
        const manifest = readJsonFile(run, String(o.file), undefined, EXIT.invalidInput);
        // The validator (and its schema compiler) is loaded only by the one command that needs it.
        const { validateManifest } = await import('../../validation/manifest.js');
        const r = validateManifest(manifest, { allowInsecureRedirects: !!o.allowInsecureRedirects });
        if (!r.ok) {
          const n = r.violations.length;
          // The daemon's own code for the same problem (invalid_manifest, with details), exit 7: found here, not by a
          // daemon.
          throw new CliError(
            `${o.file} is not a valid manifest:\n` +
              r.violations.map((v) => `  ${v.pointer || '/'}: ${v.message}`).join('\n'),
            EXIT.invalidInput,
            {
              code: 'invalid_manifest',
              message: `${o.file} is not a valid manifest: ${n} problem${n === 1 ? '' : 's'}`,
              details: r.violations,
            },
          );
        }
        for (const w of r.warnings) out.warn(`${w.pointer}: ${w.message}`);
        out.print({ valid: true, warnings: r.warnings }, (c) => c.green(`${o.file} is a valid manifest`));
      }),
    );

  const create = apps
    .command('create')
    .description('register an app from a manifest file; prints its id and secrets')
    .option('--file <manifest.json>', 'manifest file')
    .option('--from-url <APP_HOST_URL>', 'instead of --file: the daemon fetches <url>/manifest, as the app serves it');
  envOutOptions(
    create,
    "every variable the official SDK reads: the app's id and secrets, the daemon's URLs, and (where the file has none yet) the app's port, host and manifest",
  )
    .addHelpText(
      'after',
      examples(
        'appreg apps create --file manifest.json',
        'appreg apps create --file manifest.json --env-out .env --json',
        'npx appreg apps create --from-url http://localhost:5000 --env-out .env',
      ),
    )
    .action(
      action(run, async (x) => {
        const { o, out } = x;
        const envOut = envOutTarget(o);
        if (!o.file === !o.fromUrl)
          throw new CliError(
            'give the manifest with --file <manifest.json> or --from-url <APP_HOST_URL> (one of them)',
            EXIT.usage,
          );
        const client = x.client();
        let app: App;
        if (o.fromUrl) app = await appFromUrl(client, String(o.fromUrl), undefined, warningsTo(out));
        else {
          const manifest = readJsonFile(run, String(o.file));
          const same = await sameName(client, manifest);
          app = await client.request<App>('POST', `${client.base()}/apps`, {
            json: manifest,
            onHeaders: warningsTo(out),
          });
          // A second app with the same name is allowed (a copy to try things on), but rarely meant.
          if (same.length)
            out.warn(
              `you already had an app named "${app.name}": ${same.map((a) => a.id).join(', ')}; ${app.id} is another one (appreg apps sync --file ${o.file} updates an existing app instead)`,
            );
        }
        printCreated(run, out, app, envOut, client.url, envSource(o));
      }),
    );

  apps
    .command('update <appId>')
    .description("replace an app's manifest; secrets stay unchanged")
    .requiredOption('--file <manifest.json>', 'manifest file')
    .addHelpText('after', examples('appreg apps update app_123 --file manifest.json'))
    .action(
      action(run, async (x, appId) => {
        const client = x.client();
        const app = await client.request<App>('PUT', appPath(client, appId), {
          json: readJsonFile(run, String(x.o.file)),
          onHeaders: warningsTo(x.out),
        });
        x.out.print(app, (c) => summary(c, app, false));
      }),
    );

  const sync = apps
    .command('sync [appId]')
    .description(
      "create or update an app from a manifest: --file finds your app by the manifest's name (creates it when there is none); --from-url updates <appId> from what its host serves",
    )
    .option('--file <manifest.json>', 'manifest file: update your app of that name, or create it')
    .option('--from-url <APP_HOST_URL>', 'the app host; the daemon fetches <url>/manifest (give the app id)');
  envOutOptions(sync, "the app's id and secrets (created or not)")
    .addHelpText(
      'after',
      examples(
        'appreg apps sync --file manifest.json --env-out .env      # the same every time: scripts and CI',
        'appreg apps sync app_123 --from-url http://localhost:5000',
      ),
    )
    .action(
      action(run, async (x, appId) => {
        const { o, out } = x;
        const envOut = envOutTarget(o);
        if (!o.file === !o.fromUrl)
          throw new CliError(
            'give the manifest with --file <manifest.json> or --from-url <APP_HOST_URL> (one of them)',
            EXIT.usage,
          );
        const client = x.client();
        if (o.fromUrl) {
          if (!appId)
            throw new CliError(
              '--from-url updates an app: give its id (appreg apps sync <appId> --from-url <url>)',
              EXIT.usage,
            );
          const from = String(o.fromUrl);
          const app = await appFromUrl(client, from, appId, warningsTo(out));
          if (envOut)
            writeEnvOrFail(run, envOut, await withSecrets(client, app.id), client.url, 'updated', envSource(o));
          return out.print(app, (c) =>
            kv(c, [
              ['id', app.id],
              ['name', app.name],
              ['displayName', app.displayName],
              ['synced from', from],
            ]),
          );
        }
        const manifest = readJsonFile(run, String(o.file));
        let target: string | undefined = appId;
        if (!target) {
          const same = await sameName(client, manifest);
          if (same.length > 1)
            throw new CliError(
              `you have ${same.length} apps named "${String(recordOr(manifest)?.name)}" (${same.map((a) => a.id).join(', ')}): give the one to update, appreg apps sync <appId> --file ${o.file}`,
              EXIT.usage,
            );
          target = same[0]?.id;
        }
        if (!target) {
          const app = await client.request<App>('POST', `${client.base()}/apps`, {
            json: manifest,
            onHeaders: warningsTo(out),
          });
          return printCreated(run, out, { ...app, action: 'created' }, envOut, client.url, envSource(o));
        }
        const app = await client.request<App>('PUT', appPath(client, target), {
          json: manifest,
          onHeaders: warningsTo(out),
        });
        if (envOut) writeEnvOrFail(run, envOut, await withSecrets(client, app.id), client.url, 'updated', envSource(o));
        out.print(
          { ...app, action: 'updated' },
          (c) =>
            `updated ${app.id} (${app.name}) from ${o.file}\n${summary(c, app, false)}${envOut ? `\n${c.dim(`secrets written to ${envOut}`)}` : ''}`,
        );
      }),
    );

  apps
    .command('list')
    .description('list your apps (never with secrets)')
    .addHelpText('after', examples('appreg apps list', 'appreg apps list --json | jq -r ".[].id"'))
    .action(
      action(run, async (x) => {
        const client = x.client();
        const list = await client.request<App[]>('GET', `${client.base()}/apps/mine`);
        x.out.print(list, (c) =>
          table(
            c,
            ['ID', 'NAME', 'DISPLAY NAME', 'PUBLISHED'],
            list.map((a) => [a.id, String(a.name ?? ''), String(a.displayName ?? ''), String(a.published)]),
          ),
        );
      }),
    );

  apps
    .command('get <appId>')
    .description('show an app; secrets only with --show-secrets')
    .option('--show-secrets', 'include clientSecret, appKey and signingSecret')
    .addHelpText('after', examples('appreg apps get app_123', 'appreg apps get app_123 --show-secrets --json'))
    .action(
      action(run, async (x, appId) => {
        const client = x.client();
        const full = await client.request<App>('GET', `${client.base()}/apps/mine/${encodeURIComponent(appId)}`);
        const app = x.o.showSecrets ? full : secretsHidden(full);
        x.out.print(app, (c) => `${summary(c, app, !!x.o.showSecrets)}\n${appDetails(c, app)}`);
      }),
    );

  apps
    .command('delete <appId>')
    .description('permanently delete an unpublished app')
    .addHelpText('after', examples('appreg apps delete app_123'))
    .action(
      action(run, async (x, appId) => {
        const client = x.client();
        await client.request('DELETE', appPath(client, appId));
        x.out.print({ deleted: appId }, () => `deleted ${appId}`);
      }),
    );

  envOutOptions(
    apps
      .command('rotate-secrets <appId>')
      .description('issue a new clientSecret, appKey and signingSecret (the id stays)'),
    'the new secrets',
  )
    .addHelpText('after', examples('appreg apps rotate-secrets app_123 --env-out .env'))
    .action(
      action(run, async (x, appId) => {
        const envOut = envOutTarget(x.o);
        const client = x.client();
        const s = await client.request<App>('PUT', appPath(client, appId, '/secrets/rotate'));
        const app = { ...s, id: appId };
        const envError = envOut ? tryWriteEnvFile(run.io, envOut, app, client.url) : undefined;
        x.out.print(app, (c) => kv(c, [['id', appId], ...SECRET_FIELDS.map((k): [string, unknown] => [k, app[k]])]));
        if (envError) throw new CliError(`the secrets were rotated (new ones above), but ${envError}`, EXIT.usage);
      }),
    );

  for (const [name, published] of [
    ['publish', true],
    ['unpublish', false],
  ] as const) {
    apps
      .command(`${name} <appId>`)
      .description(
        published
          ? 'mark an app published (operator command; a published app cannot be deleted)'
          : 'mark an app unpublished again',
      )
      .addHelpText('after', examples(`appreg apps ${name} app_123`))
      .action(
        action(run, async (x, appId) => {
          const client = x.client();
          const app = await client.request<App>('POST', appPath(client, appId, `/${name}`));
          x.out.print(app, (c) => summary(c, app, false));
        }),
      );
  }

  apps
    .command('uninstall <appId>')
    .description(
      'uninstall an app from a workspace: every token of the app there stops working; APP_UNINSTALLED is sent',
    )
    .option('--workspace <id>', 'workspace to uninstall from (default: the one you are logged in to)')
    .addHelpText(
      'after',
      examples('appreg apps uninstall app_123', 'appreg apps uninstall app_123 --workspace ws_456 --json'),
    )
    .action(
      action<{ workspace?: string }>(run, async (x, appId) => {
        const client = x.client();
        const ws = x.o.workspace ?? must(client.creds).workspaceId;
        await client.request('DELETE', appPath(client, appId, `/installations/${encodeURIComponent(ws)}`));
        x.out.print({ uninstalled: appId, workspaceId: ws }, () => `uninstalled ${appId} from ${ws}`);
      }),
    );
}
