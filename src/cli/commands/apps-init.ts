/** appreg apps init: a starter manifest that validates as written, HTTP or socket mode. */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { CliError, EXIT } from '../../client/exit.js';
import { action, examples, unreadable } from '../options.js';
import type { Run } from '../run.js';
import { errnoOf } from '../../unknown-values.js';

/**
 * The schema's `$id` (schemas/app-manifest.schema.json): editors fetch it; the daemon and `apps validate` accept and
 * ignore it.
 */
const MANIFEST_SCHEMA_URL = 'https://appreg.dev/schemas/app-manifest.schema.json';

/**
 * The starter: one slash command, one global shortcut, one event, a local redirect. Socket mode routes everything over
 * the websocket.
 */
function starterManifest(name: string, socket: boolean): Record<string, unknown> {
  const host = 'http://localhost:5000';
  // The command is at most 32 characters with its slash (the schema's limit).
  const slug =
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .slice(0, 31)
      .replace(/^-+|-+$/g, '') || 'my-app';
  return {
    $schema: MANIFEST_SCHEMA_URL,
    name: slug,
    displayName: name,
    bot: true,
    botTitle: `${name} bot`,
    ...(socket ? { socketMode: true } : {}),
    scopes: { botScopes: ['messages:read', 'messages:write'], userScopes: ['messages:read'] },
    slashCommands: [
      { command: `/${slug}`, url: `${host}/slash/${slug}`, description: `Talk to ${name}`, usageHint: '[text]' },
    ],
    shortcuts: [{ shortcutType: 'GLOBAL', url: `${host}/shortcut`, name: 'start', displayName: `Start ${name}` }],
    eventSubscriptions: { url: `${host}/hook`, events: ['NEW_MESSAGE'] },
    redirectUrls: [`${host}/redirect`],
    offlineMessage: `${name} is offline`,
  };
}

const MAX_NAME = 60;

export function registerAppsInit(apps: Command, run: Run): void {
  apps
    .command('init')
    .description('write a starter manifest (with "$schema" for editors) that validates as written')
    .option('--socket', 'a socket-mode app (everything over the websocket, no public URL needed)')
    .option('--name <name>', 'display name of the app', 'My App')
    .option('--out <file>', 'where to write it', 'manifest.json')
    .option('--force', 'overwrite the file if it exists')
    .addHelpText(
      'after',
      examples(
        'appreg apps init --name "Standup Bot" && appreg apps validate --file manifest.json',
        'appreg apps init --socket --out socket-app.json',
      ),
    )
    .action(
      action(run, async ({ o, out }) => {
        const name = String(o.name).trim();
        // Within the manifest's limits (80 for display names, with room for "Start …" on the shortcut).
        if (!name || name.length > MAX_NAME)
          throw new CliError(`--name must be 1 to ${MAX_NAME} characters`, EXIT.usage);
        const file = path.resolve(run.io.cwd, String(o.out));
        const manifest = starterManifest(name, !!o.socket);
        try {
          // its folder is made, as for appreg test --output (the README writes under tmp/)
          fs.mkdirSync(path.dirname(file), { recursive: true });
          fs.writeFileSync(file, JSON.stringify(manifest, null, 2) + '\n', { flag: o.force ? 'w' : 'wx' });
        } catch (e) {
          const code = errnoOf(e);
          if (code === 'EEXIST')
            throw new CliError(`${o.out} already exists; give --force to overwrite it, or --out <file>`, EXIT.usage);
          throw new CliError(`cannot write ${o.out}: ${unreadable(e)}`, EXIT.usage);
        }
        out.print(
          { file, manifest },
          (c) =>
            `wrote ${c.bold(String(o.out))}: edit the URLs (${o.socket ? 'socket mode: only the redirect URL is used' : 'your app host'}), then\n  appreg apps validate --file ${o.out}\n  appreg apps create --file ${o.out} --env-out .env`,
        );
      }),
    );
}
