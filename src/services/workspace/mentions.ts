/**
 * Who a message mentions, as NEW_MESSAGE and UPDATED_MESSAGE report it (docs/protocol.md §5.3):
 * `md` the users mentioned directly, `mc` the users reached by a channel mention (@channel,
 * @here), `mu` the users reached by a user group mention.
 *
 * A mention is written in the text the platform's way, `<<@userId>>`, `<<&groupId>>`,
 * `<<#channelId>>` (a channel link, which reaches nobody), with `<<@channel>>` and `<<@here>>` for
 * the whole channel; or as a rich-text element of the blocks (`{type:"user", user_id}`,
 * `{type:"usergroup", usergroup_id}`, `{type:"broadcast", range}`). Only what resolves counts: a
 * user of the workspace, an enabled group of the workspace. The author is not among those a
 * channel or group mention reaches; a message that mentions nobody costs one scan of its text
 * and blocks, and no read.
 */
import type { Store } from '../../store/types.js';
import { WORKSPACE_TABLES, type ChannelRecord } from '../../model/workspace.js';
import { IDENTITY_TABLES } from '../../model/identity.js';
import type { Json } from '../../model/json.js';

export interface Mentions {
  md: string[];
  mc: string[];
  mu: string[];
}

/** What a message's text and blocks name, before anything is looked up. */
export interface MentionMarks {
  users: string[];
  groups: string[];
  /** @channel or @here. */
  broadcast: boolean;
}

const MARK = /<<([@&])([^<>\s]{1,100})>>/g;
const BROADCAST = new Set(['channel', 'here']);

/** The mentions written in `text` and `blocks`, in the order they appear, each once. */
export function mentionMarks(text: string, blocks: readonly Json[]): MentionMarks {
  const users = new Set<string>();
  const groups = new Set<string>();
  let broadcast = false;
  if (text.includes('<<'))
    for (const [, sigil, id] of text.matchAll(MARK)) {
      if (id === undefined) continue;
      if (sigil === '&') groups.add(id);
      else if (BROADCAST.has(id)) broadcast = true;
      else users.add(id);
    }
  // every object of the blocks, however nested (JSON entering the daemon is at most 64 deep)
  const stack: Json[] = [...blocks];
  while (stack.length) {
    const o = stack.pop();
    if (!o || typeof o !== 'object') continue;
    if (Array.isArray(o)) {
      for (let i = o.length - 1; i >= 0; i--) {
        const item = o[i];
        if (item !== undefined) stack.push(item);
      }
      continue;
    }
    if (o.type === 'user' && typeof o.user_id === 'string') users.add(o.user_id);
    else if (o.type === 'usergroup' && typeof o.usergroup_id === 'string') groups.add(o.usergroup_id);
    else if (o.type === 'broadcast' && typeof o.range === 'string' && BROADCAST.has(o.range)) broadcast = true;
    else if (Array.isArray(o.elements)) stack.push(o.elements);
  }
  return { users: [...users], groups: [...groups], broadcast };
}

export function createMentions(deps: { store: Store; membersOf: (ch: ChannelRecord) => Promise<string[]> }) {
  const { store, membersOf } = deps;

  /**
   * md, mc and mu of a message by `author` in channel `ch`, with what the marks name looked up (the users and the
   * groups named: one read each, whatever their number).
   */
  async function of(ch: ChannelRecord, author: string, text: string, blocks: readonly Json[]): Promise<Mentions> {
    const marks = mentionMarks(text, blocks);
    const out: Mentions = { md: [], mc: [], mu: [] };
    if (!marks.users.length && !marks.groups.length && !marks.broadcast) return out;
    const [users, groups] = await Promise.all([
      store.getMany(marks.users.map((id) => ({ table: IDENTITY_TABLES.workspaceUsers, id }))),
      store.getMany(marks.groups.map((id) => ({ table: WORKSPACE_TABLES.groups, id }))),
    ]);
    out.md = marks.users.filter((_, i) => users[i]?.workspaceId === ch.workspaceId);
    if (marks.broadcast) out.mc = (await membersOf(ch)).filter((u) => u !== author);
    const reached = new Set<string>();
    for (const g of groups)
      if (g && g.workspaceId === ch.workspaceId && !g.disabled)
        for (const u of g.workspaceUserIds) if (u !== author) reached.add(u);
    out.mu = [...reached];
    return out;
  }

  return { of };
}

export type MentionsOf = ReturnType<typeof createMentions>['of'];
