/** appreg open: a one-time link that signs a browser in as you, opened in the browser when there is one. */
import type { Command } from 'commander';
import { CliError, EXIT } from '../../client/exit.js';
import { action, examples } from '../options.js';
import type { Run } from '../run.js';
import type { Io } from '../../client/io.js';

interface SignInLink {
  url: string;
  expiresAt: string;
}

/**
 * The program that opens a URL in the user's browser on this system, or undefined when there is no
 * display to open it on: on Linux and the BSDs a graphical session is told by DISPLAY (X11) or
 * WAYLAND_DISPLAY; macOS and Windows always have one. (`start` is a cmd built-in; its first quoted
 * argument is a window title, hence the empty one.)
 */
function browserOpener(io: Pick<Io, 'env' | 'platform'>, url: string): { command: string; args: string[] } | undefined {
  if (io.platform === 'darwin') return { command: 'open', args: [url] };
  if (io.platform === 'win32') return { command: 'cmd', args: ['/c', 'start', '""', url] };
  if (!io.env.DISPLAY && !io.env.WAYLAND_DISPLAY) return undefined;
  return { command: 'xdg-open', args: [url] };
}

export function registerOpen(program: Command, run: Run): void {
  program
    .command('open')
    .description('sign a browser in as you: ask the daemon for a one-time link (5 minutes) and open it, or print it')
    .option(
      '--path <path>',
      'the console page to land on (default /, your apps), e.g. /console/deliveries or /console/channels',
    )
    .option('--print', 'only print the link, do not open a browser (with --json too, the browser opens unless --print)')
    .addHelpText(
      'after',
      examples(
        'appreg open',
        "appreg open --path /console/channels   # the workspace: channels, messages, the apps' buttons",
        'appreg open --print          # on a server: copy the link to your browser',
        'appreg open --print --json   # {"url", "expiresAt"} for scripts',
      ),
    )
    .action(
      action(run, async ({ o, out, client: connect }) => {
        // Refused before a link is made: a path that is no page would land the browser on a JSON 404.
        const { whyNotAPage } = await import('../../console-pages.js');
        const why = o.path === undefined ? undefined : whyNotAPage(String(o.path));
        if (why) throw new CliError(`--path ${why}`, EXIT.usage);
        const client = connect();
        const body = o.path === undefined ? {} : { path: String(o.path) };
        const link = await client.request<SignInLink>('POST', `${client.base()}/web/sign-in-links`, { json: body });
        const opener = o.print ? undefined : browserOpener(run.io, link.url);
        // The link is always printed: it is what the user has when no browser opens, or the wrong one does.
        const failed = opener && (await run.io.startDetached(opener.command, opener.args));
        out.print({ url: link.url, expiresAt: link.expiresAt }, (c) => {
          if (o.print) return link.url;
          const note = c.dim('(the link works once, for 5 minutes)');
          if (opener && !failed) return `opened your browser at ${link.url}\n${note}`;
          const why = opener ? `could not run ${opener.command} (${failed}); ` : '';
          return `${why}open it in your browser:\n  ${link.url}\n${note}`;
        });
      }),
    );
}
