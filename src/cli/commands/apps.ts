/** appreg apps …: manage apps by manifest. */
import fs from 'node:fs';
import type { Command } from 'commander';
import { createClient, type GlobalOpts } from '../client.js';
import { CliError, EXIT, createOut, kv, table } from '../output.js';
import { validateManifest } from '../../validation/manifest.js';
import { appFromUrl } from './deliver.js';

const g = (cmd: Command) => cmd.optsWithGlobals() as GlobalOpts & Record<string, unknown>;
type App = Record<string, unknown> & { id: string; name?: string; displayName?: string; published?: boolean; clientSecret?: string; appKey?: string; signingSecret?: string };
const SECRET_FIELDS = ['clientSecret', 'appKey', 'signingSecret'] as const;

export function readManifestFile(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, EXIT.usage);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CliError(`${file} is not valid JSON: ${(e as Error).message}`, EXIT.usage);
  }
}

/**
 * PUMBLE_APP_* lines, the names the official SDK reads, written 0600. An existing file keeps its
 * other lines (an app's .env usually holds more than these four): the four are replaced in
 * place, or appended. Written to a 0600 temporary file and renamed, so no other mode is ever seen.
 */
export function writeEnvFile(file: string, app: App): void {
  const values: Record<string, string> = {
    PUMBLE_APP_ID: app.id,
    PUMBLE_APP_KEY: String(app.appKey),
    PUMBLE_APP_CLIENT_SECRET: String(app.clientSecret),
    PUMBLE_APP_SIGNING_SECRET: String(app.signingSecret),
  };
  let existing = '';
  try {
    existing = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new CliError(`cannot read ${file}: ${(e as Error).message}`, EXIT.usage);
  }
  const done = new Set<string>();
  const lines = existing === '' ? [] : existing.replace(/\r?\n$/, '').split(/\r?\n/);
  const out = lines.map((line) => {
    const m = /^\s*(?:export\s+)?([A-Z_]+)\s*=/.exec(line);
    const key = m?.[1];
    if (!key || !(key in values)) return line;
    if (done.has(key)) return null; // a duplicate of a key already replaced
    done.add(key);
    return `${key}=${values[key]}`;
  });
  for (const [k, v] of Object.entries(values)) if (!done.has(k)) out.push(`${k}=${v}`);
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(tmp, out.filter((l) => l !== null).join('\n') + '\n', { mode: 0o600, flag: 'wx' });
    fs.chmodSync(tmp, 0o600);
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw new CliError(`cannot write ${file}: ${(e as Error).message}`, EXIT.usage);
  }
}

/** writeEnvFile, returning its error message instead of throwing. */
function tryWriteEnvFile(file: string, app: App): string | undefined {
  try {
    writeEnvFile(file, app);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

function secretsHidden(app: App): App {
  const copy = { ...app };
  for (const k of SECRET_FIELDS) delete copy[k];
  return copy;
}

function summary(c: Parameters<typeof kv>[0], app: App, withSecrets: boolean): string {
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

function printWarnings(out: ReturnType<typeof createOut>, header: string | undefined): void {
  if (!header) return;
  try {
    for (const w of JSON.parse(header) as Array<{ pointer: string; message: string }>) out.warn(`${w.pointer}: ${w.message}`);
  } catch {
    /* ignore */
  }
}

export function registerApps(program: Command): void {
  const apps = program.command('apps').description('register and manage apps by manifest');

  apps
    .command('create')
    .description('register an app from a manifest file; prints its id and secrets')
    .option('--file <manifest.json>', 'manifest file')
    .option('--from-url <APP_HOST_URL>', 'instead of --file: the daemon fetches <url>/manifest, as the app serves it')
    .option('--env-file <path>', 'also write PUMBLE_APP_ID, PUMBLE_APP_KEY, PUMBLE_APP_CLIENT_SECRET, PUMBLE_APP_SIGNING_SECRET there (0600)')
    .addHelpText('after', '\nExamples:\n  $ appreg apps create --file manifest.json\n  $ appreg apps create --file manifest.json --env-file .env --json\n  $ appreg apps create --from-url http://localhost:5000 --env-file .env')
    .action(async (_o, cmd: Command) => {
      const o = g(cmd);
      const out = createOut(o);
      if (!o.file === !o.fromUrl) throw new CliError('give the manifest with --file <manifest.json> or --from-url <APP_HOST_URL> (one of them)', EXIT.usage);
      let app: App;
      const onHeaders = (h: Record<string, string | string[] | undefined>) => printWarnings(out, h['x-appreg-warnings'] as string | undefined);
      if (o.fromUrl) app = (await appFromUrl(o, String(o.fromUrl), undefined, onHeaders)) as App;
      else {
        const manifest = readManifestFile(String(o.file));
        const client = createClient(o);
        app = await client.request<App>('POST', `${client.base()}/apps`, { json: manifest, onHeaders });
      }
      // The secrets are printed even when the env file cannot be written: they are shown only now.
      const envError = o.envFile ? tryWriteEnvFile(String(o.envFile), app) : undefined;
      out.print(app, (c) => summary(c, app, true) + (o.envFile && !envError ? `\n${c.dim(`secrets written to ${o.envFile}`)}` : ''));
      if (envError) throw new CliError(`the app ${app.id} was created (secrets above), but ${envError}`, EXIT.usage);
    });

  apps
    .command('update <appId>')
    .description('replace an app\'s manifest; secrets stay unchanged')
    .requiredOption('--file <manifest.json>', 'manifest file')
    .addHelpText('after', '\nExample:\n  $ appreg apps update app_123 --file manifest.json')
    .action(async (appId: string, _o, cmd: Command) => {
      const o = g(cmd);
      const out = createOut(o);
      const client = createClient(o);
      const app = await client.request<App>('PUT', `${client.base()}/apps/${encodeURIComponent(appId)}`, {
        json: readManifestFile(String(o.file)),
        onHeaders: (h) => printWarnings(out, h['x-appreg-warnings'] as string | undefined),
      });
      out.print(app, (c) => summary(c, app, false));
    });

  apps
    .command('list')
    .description('list your apps (never with secrets)')
    .addHelpText('after', '\nExamples:\n  $ appreg apps list\n  $ appreg apps list --json | jq -r ".[].id"')
    .action(async (_o, cmd: Command) => {
      const o = g(cmd);
      const client = createClient(o);
      const list = await client.request<App[]>('GET', `${client.base()}/apps/mine`);
      createOut(o).print(list, (c) => table(c, ['ID', 'NAME', 'DISPLAY NAME', 'PUBLISHED'], list.map((a) => [a.id, String(a.name ?? ''), String(a.displayName ?? ''), String(a.published)])));
    });

  apps
    .command('get <appId>')
    .description('show an app; secrets only with --show-secrets')
    .option('--show-secrets', 'include clientSecret, appKey and signingSecret')
    .addHelpText('after', '\nExamples:\n  $ appreg apps get app_123\n  $ appreg apps get app_123 --show-secrets --json')
    .action(async (appId: string, _o, cmd: Command) => {
      const o = g(cmd);
      const client = createClient(o);
      const full = await client.request<App>('GET', `${client.base()}/apps/mine/${encodeURIComponent(appId)}`);
      const app = o.showSecrets ? full : secretsHidden(full);
      createOut(o).print(app, (c) => summary(c, app, !!o.showSecrets));
    });

  apps
    .command('delete <appId>')
    .description('permanently delete an unpublished app')
    .addHelpText('after', '\nExample:\n  $ appreg apps delete app_123')
    .action(async (appId: string, _o, cmd: Command) => {
      const o = g(cmd);
      const client = createClient(o);
      await client.request('DELETE', `${client.base()}/apps/${encodeURIComponent(appId)}`);
      createOut(o).print({ deleted: appId }, () => `deleted ${appId}`);
    });

  apps
    .command('rotate-secrets <appId>')
    .description('issue a new clientSecret, appKey and signingSecret (the id stays)')
    .option('--env-file <path>', 'also write the new secrets there (0600)')
    .addHelpText('after', '\nExample:\n  $ appreg apps rotate-secrets app_123 --env-file .env')
    .action(async (appId: string, _o, cmd: Command) => {
      const o = g(cmd);
      const client = createClient(o);
      const s = await client.request<App>('PUT', `${client.base()}/apps/${encodeURIComponent(appId)}/secrets/rotate`);
      const app = { ...s, id: appId };
      const envError = o.envFile ? tryWriteEnvFile(String(o.envFile), app) : undefined;
      createOut(o).print(app, (c) => kv(c, [['id', appId], ...SECRET_FIELDS.map((k) => [k, app[k]] as [string, unknown])]));
      if (envError) throw new CliError(`the secrets were rotated (new ones above), but ${envError}`, EXIT.usage);
    });

  for (const [name, published] of [['publish', true], ['unpublish', false]] as const) {
    apps
      .command(`${name} <appId>`)
      .description(published ? 'mark an app published (operator command; a published app cannot be deleted)' : 'mark an app unpublished again')
      .addHelpText('after', `\nExample:\n  $ appreg apps ${name} app_123`)
      .action(async (appId: string, _o, cmd: Command) => {
        const o = g(cmd);
        const client = createClient(o);
        const app = await client.request<App>('POST', `${client.base()}/apps/${encodeURIComponent(appId)}/${name}`);
        createOut(o).print(app, (c) => summary(c, app, false));
      });
  }

  apps
    .command('validate')
    .description('check a manifest offline against the same schema the daemon uses')
    .requiredOption('--file <manifest.json>', 'manifest file')
    .option('--allow-insecure-redirects', 'accept http: redirect URLs on non-local hosts, as a daemon started with that option does')
    .addHelpText('after', '\nExample:\n  $ appreg apps validate --file manifest.json && echo ok')
    .action(async (_o, cmd: Command) => {
      const o = g(cmd);
      const out = createOut(o);
      const r = validateManifest(readManifestFile(String(o.file)), { allowInsecureRedirects: !!o.allowInsecureRedirects });
      if (!r.ok) {
        if (o.json) out.print({ valid: false, details: r.violations });
        throw new CliError(`${o.file} is not a valid manifest:\n` + r.violations.map((v) => `  ${v.pointer || '/'}: ${v.message}`).join('\n'), EXIT.rejected, { quiet: !!o.json });
      }
      for (const w of r.warnings) out.warn(`${w.pointer}: ${w.message}`);
      out.print({ valid: true, warnings: r.warnings }, (c) => c.green(`${o.file} is a valid manifest`));
    });
}
