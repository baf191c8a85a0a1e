/**
 * Reactions on messages: a person's or an app's emoji codes, REACTION_ADDED when one is new (docs/protocol.md §9.2).
 */
import { invalidRequest } from '../../errors.js';
import { audienceOf, type WorkspaceEvents } from './events.js';
import type { MessageIndex } from './message-index.js';
import type { Messages } from './messages.js';
import { WORKSPACE_TABLES } from '../../model/workspace.js';
import type { Actor } from './users.js';

const CODE = /^:[^\s:]{1,198}:$/;

/** A reaction (platform.schema.json#reactionBody): its code's form is checked here, for every caller. */
export interface ReactionBody {
  code: string;
}

/** How a reaction's code is refused: by its form here, by its absence at the edge. */
export const badReactionCode = { pointer: '/code', message: 'must look like :name:' };
export const BAD_REACTION_CODE = 'code must be an emoji code such as :thumbsup: (3 to 200 characters).';

function reactionCode(body: ReactionBody): string {
  const { code } = body;
  if (!CODE.test(code)) throw invalidRequest(BAD_REACTION_CODE, [badReactionCode]);
  return code;
}

export function createReactions(deps: { index: MessageIndex; messages: Messages; events: WorkspaceEvents }) {
  const { index, messages, events } = deps;

  /** POST /v1/messages/{m}/reactions {code}: REACTION_ADDED when it is new. */
  async function react(a: Actor, messageId: string, body: ReactionBody): Promise<void> {
    const code = reactionCode(body);
    // a transaction on the message: the same reaction added at once by two requests counts once
    const added = await index.transaction(async (tx) => {
      const { ch, m } = await messages.visibleMessage(a, undefined, messageId, tx);
      if (m.ephemeralTo) throw invalidRequest('An ephemeral message cannot be reacted to.');
      if (m.reactions.some((r) => r.user === a.userId && r.code === code)) return false;
      tx.put(WORKSPACE_TABLES.messages, m.id, { ...m, reactions: [...m.reactions, { user: a.userId, code }] });
      tx.apply(
        events.workspaceEvent('REACTION_ADDED', ch.workspaceId, audienceOf(ch), {
          wId: m.workspaceId,
          cId: m.channelId,
          mId: m.id,
          mat: m.author,
          uId: a.userId,
          rc: code,
          ty: 'REACTION_ADDED',
        }),
      );
      return true;
    });
    if (added) events.written();
  }

  /** DELETE /v1/messages/{m}/reactions {code}: the actor's own reaction. */
  async function unreact(a: Actor, messageId: string, body: ReactionBody): Promise<void> {
    const code = reactionCode(body);
    await index.transaction(async (tx) => {
      const { m } = await messages.visibleMessage(a, undefined, messageId, tx);
      const left = m.reactions.filter((r) => !(r.user === a.userId && r.code === code));
      if (left.length !== m.reactions.length) tx.put(WORKSPACE_TABLES.messages, m.id, { ...m, reactions: left });
    });
  }

  return { react, unreact };
}
export type Reactions = ReturnType<typeof createReactions>;
