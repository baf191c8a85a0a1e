/** appreg apps …: register and manage apps by manifest, from a file or from the app's own host. */
import type { IncomingHttpHeaders } from 'node:http';
import type { Command } from 'commander';
import { CliError, EXIT, kv, table, type Out } from '../output.js';
import { action, examples, readJsonFile } from '../options.js';
import { envOutOptions, envOutTarget, tryWriteEnvFile } from '../env-file.js';
import type { Client } from '../client.js';
import type { Run } from '../run.js';
import { appDetails } from './apps-view.js';
import { registerAppsInit } from './apps-init.js';

type App = Record<string, unknown> & { id: string; name?: string; displayName?: string; published?: boolean; clientSecret?: string; appKey?: string; signingSecret?: string };
const SECRET_FIELDS = ['clientSecret', 'appKey', 'signingSecret'] as const;
const appPath = (client: Client, appId: string, rest = '') => `${client.base()}/apps/${encodeURIComponent(appId)}${rest}`;

function secretsHidden(app: App): App {
  const copy = { ...app };
  for (const k of SECRET_FIELDS) delete copy[k];
  return copy;
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
    for (const w of JSON.parse(header) as Array<{ pointer: string; message: string }>) out.warn(`${w.pointer}: ${w.message}`);
  } catch {
    /* ignore */
  }
};

/** `apps create --from-url` and `apps sync`: the daemon fetches <APP_HOST_URL>/manifest and validates it. */
function appFromUrl(client: Client, url: string, appId?: string, onHeaders?: (h: IncomingHttpHeaders) => void): Promise<App> {
  return client.request<App>('POST', `${client.base()}/apps/from-url`, { json: appId ? { url, appId } : { url }, timeoutMs: 60_000, onHeaders });
}

export function registerApps(program: Command, run: Run): void {
  const apps = program.command('apps').description('register and manage apps by manifest');

  const create = apps
    .command('create')
    .description('register an app from a manifest file; prints its id and secrets')
    .option('--file <manifest.json>', 'manifest file')
    .option('--from-url <APP_HOST_URL>', 'instead of --file: the daemon fetches <url>/manifest, as the app serves it');
  envOutOptions(create, 'PUMBLE_APP_ID, PUMBLE_APP_KEY, PUMBLE_APP_CLIENT_SECRET, PUMBLE_APP_SIGNING_SECRET')
    .addHelpText('after', examples('appreg apps create --file manifest.json', 'appreg apps create --file manifest.json --env-out .env --json', 'npx appreg apps create --from-url http://localhost:5000 --env-out .env'))
    .action(action(run, async (x) => {
      const { o, out } = x;
      const envOut = envOutTarget(o);
      if (!o.file === !o.fromUrl) throw new CliError('give the manifest with --file <manifest.json> or --from-url <APP_HOST_URL> (one of them)', EXIT.usage);
      let app: App;
      if (o.fromUrl) app = await appFromUrl(x.client(), String(o.fromUrl), undefined, warningsTo(out));
      else {
        const manifest = readJsonFile(run, String(o.file));
        const client = x.client();
        app = await client.request<App>('POST', `${client.base()}/apps`, { json: manifest, onHeaders: warningsTo(out) });
      }
      // The secrets are printed even when the env file cannot be written: they are shown only now.
      const envError = envOut ? tryWriteEnvFile(run.io, envOut, app) : undefined;
      out.print(app, (c) => summary(c, app, true) + (envOut && !envError ? `\n${c.dim(`secrets written to ${envOut}`)}` : ''));
      if (envError) throw new CliError(`the app ${app.id} was created (secrets above), but ${envError}`, EXIT.usage);
    }));

  apps
    .command('update <appId>')
    .description('replace an app\'s manifest; secrets stay unchanged')
    .requiredOption('--file <manifest.json>', 'manifest file')
    .addHelpText('after', examples('appreg apps update app_123 --file manifest.json'))
    .action(action(run, async (x, appId) => {
      const client = x.client();
      const app = await client.request<App>('PUT', appPath(client, appId), { json: readJsonFile(run, String(x.o.file)), onHeaders: warningsTo(x.out) });
      x.out.print(app, (c) => summary(c, app, false));
    }));

  apps
    .command('sync <appId>')
    .description('update an app from the manifest its own host serves at <APP_HOST_URL>/manifest')
    .requiredOption('--from-url <APP_HOST_URL>', 'the app host; the daemon fetches <url>/manifest')
    .addHelpText('after', examples('appreg apps sync app_123 --from-url http://localhost:5000'))
    .action(action(run, async (x, appId) => {
      const from = String(x.o.fromUrl);
      const app = await appFromUrl(x.client(), from, appId);
      x.out.print(app, (c) => kv(c, [['id', app.id], ['name', app.name], ['displayName', app.displayName], ['synced from', from]]));
    }));

  apps
    .command('list')
    .description('list your apps (never with secrets)')
    .addHelpText('after', examples('appreg apps list', 'appreg apps list --json | jq -r ".[].id"'))
    .action(action(run, async (x) => {
      const client = x.client();
      const list = await client.request<App[]>('GET', `${client.base()}/apps/mine`);
      x.out.print(list, (c) => table(c, ['ID', 'NAME', 'DISPLAY NAME', 'PUBLISHED'], list.map((a) => [a.id, String(a.name ?? ''), String(a.displayName ?? ''), String(a.published)])));
    }));

  apps
    .command('get <appId>')
    .description('show an app; secrets only with --show-secrets')
    .option('--show-secrets', 'include clientSecret, appKey and signingSecret')
    .addHelpText('after', examples('appreg apps get app_123', 'appreg apps get app_123 --show-secrets --json'))
    .action(action(run, async (x, appId) => {
      const client = x.client();
      const full = await client.request<App>('GET', `${client.base()}/apps/mine/${encodeURIComponent(appId)}`);
      const app = x.o.showSecrets ? full : secretsHidden(full);
      x.out.print(app, (c) => `${summary(c, app, !!x.o.showSecrets)}\n${appDetails(c, app)}`);
    }));

  apps
    .command('delete <appId>')
    .description('permanently delete an unpublished app')
    .addHelpText('after', examples('appreg apps delete app_123'))
    .action(action(run, async (x, appId) => {
      const client = x.client();
      await client.request('DELETE', appPath(client, appId));
      x.out.print({ deleted: appId }, () => `deleted ${appId}`);
    }));

  envOutOptions(apps.command('rotate-secrets <appId>').description('issue a new clientSecret, appKey and signingSecret (the id stays)'), 'the new secrets')
    .addHelpText('after', examples('appreg apps rotate-secrets app_123 --env-out .env'))
    .action(action(run, async (x, appId) => {
      const envOut = envOutTarget(x.o);
      const client = x.client();
      const s = await client.request<App>('PUT', appPath(client, appId, '/secrets/rotate'));
      const app = { ...s, id: appId };
      const envError = envOut ? tryWriteEnvFile(run.io, envOut, app) : undefined;
      x.out.print(app, (c) => kv(c, [['id', appId], ...SECRET_FIELDS.map((k) => [k, app[k]] as [string, unknown])]));
      if (envError) throw new CliError(`the secrets were rotated (new ones above), but ${envError}`, EXIT.usage);
    }));

  for (const [name, published] of [['publish', true], ['unpublish', false]] as const) {
    apps
      .command(`${name} <appId>`)
      .description(published ? 'mark an app published (operator command; a published app cannot be deleted)' : 'mark an app unpublished again')
      .addHelpText('after', examples(`appreg apps ${name} app_123`))
      .action(action(run, async (x, appId) => {
        const client = x.client();
        const app = await client.request<App>('POST', appPath(client, appId, `/${name}`));
        x.out.print(app, (c) => summary(c, app, false));
      }));
  }

  apps
    .command('uninstall <appId>')
    .description('uninstall an app from a workspace: every token of the app there stops working; APP_UNINSTALLED is sent')
    .option('--workspace <id>', 'workspace to uninstall from (default: the one you are logged in to)')
    .addHelpText('after', examples('appreg apps uninstall app_123', 'appreg apps uninstall app_123 --workspace ws_456 --json'))
    .action(action(run, async (x, appId) => {
      const client = x.client();
      const ws = (x.o.workspace as string | undefined) ?? client.creds!.workspaceId;
      await client.request('DELETE', appPath(client, appId, `/installations/${encodeURIComponent(ws)}`));
      x.out.print({ uninstalled: appId, workspaceId: ws }, () => `uninstalled ${appId} from ${ws}`);
    }));

  registerAppsInit(apps, run);

  apps
    .command('validate')
    .description('check a manifest offline against the same schema the daemon uses')
    .requiredOption('--file <manifest.json>', 'manifest file')
    .option('--allow-insecure-redirects', 'accept http: redirect URLs on non-local hosts, as a daemon started with that option does')
    .addHelpText('after', `
Exit codes: 0 valid (warnings on stderr); 7 not a valid manifest, or not JSON ({"error":{"code":"invalid_manifest","details":[…]}} with --json); 2 the file cannot be read.
${examples('appreg apps validate --file manifest.json && echo ok', 'appreg apps validate --file manifest.json --json')}`)
    .action(action(run, async ({ o, out }) => {
      const manifest = readJsonFile(run, String(o.file), undefined, EXIT.invalidInput);
      // The validator (and its schema compiler) is loaded only by the one command that needs it.
      const { validateManifest } = await import('../../validation/manifest.js');
      const r = validateManifest(manifest, { allowInsecureRedirects: !!o.allowInsecureRedirects });
      if (!r.ok) {
        const n = r.violations.length;
        // The daemon's own code for the same problem (invalid_manifest, with details), exit 7: found here, not by a daemon.
        throw new CliError(`${o.file} is not a valid manifest:\n` + r.violations.map((v) => `  ${v.pointer || '/'}: ${v.message}`).join('\n'), EXIT.invalidInput, {
          code: 'invalid_manifest', message: `${o.file} is not a valid manifest: ${n} problem${n === 1 ? '' : 's'}`, details: r.violations,
        });
      }
      for (const w of r.warnings) out.warn(`${w.pointer}: ${w.message}`);
      out.print({ valid: true, warnings: r.warnings }, (c) => c.green(`${o.file} is a valid manifest`));
    }));
}
