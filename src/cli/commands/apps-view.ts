/** Human views of an app for `apps get`: everything the manifest routes (URLs, commands, shortcuts, scopes, redirects). */
import type { Out } from '../output.js';

type C = Out['c'];
interface Url { url?: string }
interface Shortcut extends Url { name?: string; shortcutType?: string }
interface Slash extends Url { command?: string; usageHint?: string | null }
interface Menu extends Url { onAction?: string }

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** A titled section of indented lines; "(none)" when empty. */
function section(c: C, title: string, lines: string[]): string {
  return `${c.bold(title)}\n${lines.length ? lines.map((l) => `  ${l}`).join('\n') : `  ${c.dim('(none)')}`}`;
}

/** The routing part of an app, below its summary. */
export function appDetails(c: C, app: Record<string, unknown>): string {
  const socket = app.socketMode === true;
  const arrow = (url: string | undefined) => (socket ? c.dim('(socket mode)') : url || c.dim('(no URL)'));
  const ev = (app.eventSubscriptions ?? {}) as { url?: string; events?: string[] };
  const scopes = (app.scopes ?? {}) as { botScopes?: string[]; userScopes?: string[] };
  const urls: string[] = [];
  if (ev.events?.length || ev.url) urls.push(`events            ${arrow(ev.url)}  ${c.dim((ev.events ?? []).join(', ') || '(no events)')}`);
  for (const [k, label] of [['blockInteraction', 'block interaction'], ['viewAction', 'view action']] as const) {
    const v = app[k] as Url | null | undefined;
    if (v?.url) urls.push(`${label.padEnd(18)}${arrow(v.url)}`);
  }
  for (const m of list(app.dynamicMenus) as Menu[]) urls.push(`${`menu ${m.onAction ?? ''}`.padEnd(18)}${arrow(m.url)}`);
  for (const k of ['helpUrl', 'avatarUrl', 'listingUrl'] as const) if (typeof app[k] === 'string') urls.push(`${k.padEnd(18)}${String(app[k])}`);
  return [
    section(c, 'URLs', urls),
    section(c, 'slash commands', (list(app.slashCommands) as Slash[]).map((s) => `${s.command ?? ''}${s.usageHint ? ` ${s.usageHint}` : ''}  ${arrow(s.url)}`)),
    section(c, 'shortcuts', (list(app.shortcuts) as Shortcut[]).map((s) => `${s.name ?? ''} (${s.shortcutType === 'ON_MESSAGE' ? 'message' : 'global'})  ${arrow(s.url)}`)),
    section(c, 'scopes', [`bot:  ${(scopes.botScopes ?? []).join(', ') || c.dim('(none)')}`, `user: ${(scopes.userScopes ?? []).join(', ') || c.dim('(none)')}`]),
    section(c, 'redirect URLs', list(app.redirectUrls).map(String)),
  ].join('\n');
}
