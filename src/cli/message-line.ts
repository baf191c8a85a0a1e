/** A workspace message as the CLI shows it (say, messages list, deliver-test's channel watch). */
import type { ChalkInstance } from 'chalk';
import type { Message } from '../client/workspace.js';

/** One message on one line (more for multi-line text): time, author, text, then thread and reactions. */
export function formatMessage(c: ChalkInstance, m: Message, names: Map<string, string>): string {
  const time = m.timestamp.slice(11, 19);
  const who = names.get(m.author) ?? m.author;
  const extra: string[] = [];
  if (m.threadReplyInfo) extra.push(`reply in thread ${m.threadReplyInfo.rootId}`);
  if (m.threadRootInfo?.repliesCount)
    extra.push(`${m.threadRootInfo.repliesCount} repl${m.threadRootInfo.repliesCount === 1 ? 'y' : 'ies'}`);
  if (m.blocks?.length) extra.push(`${m.blocks.length} block${m.blocks.length === 1 ? '' : 's'}`);
  if (m.attachments?.length) extra.push(`${m.attachments.length} attachment${m.attachments.length === 1 ? '' : 's'}`);
  if (m.edited) extra.push('edited');
  if (m.ephemeral) extra.push('only visible to you');
  const counts = new Map<string, number>();
  for (const r of m.reactions ?? []) counts.set(r.code, (counts.get(r.code) ?? 0) + 1);
  if (counts.size) extra.push([...counts].map(([code, n]) => `${code} ${n}`).join(' '));
  const text = m.text.replace(/\n/g, '\n    ');
  return `${c.dim(time)} ${c.bold(who)}: ${text}${extra.length ? ` ${c.dim(`(${extra.join(', ')})`)}` : ''} ${c.dim(m.id)}`;
}
