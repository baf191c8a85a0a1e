/**
 * POST …/act-as {user}: the workspace's owner gets a short-lived management token of another
 * (human) user of the workspace, by id or email (appreg say --as). Nothing of that user's own
 * logins is touched: no lead is made or voided, no login code is issued (docs/security.md AS1, AS2).
 */
import { forbidden, invalidRequest, notFound } from '../../errors.js';
import type { Store } from '../../store/types.js';
import { IDENTITY_TABLES } from '../../model/identity.js';
import type { Members } from './members.js';
import type { ManagementTokens } from './tokens.js';
import type { IssuedToken, Principal } from './types.js';
import type { Json } from '../../model/json.js';

/** How long a token of `actAs` lives: one command's worth (the CLI revokes it when done). */
const ACT_AS_TTL_SECONDS = 10 * 60;

export interface ActAsDeps {
  store: Store;
  members: Pick<Members, 'ownerOf'>;
  tokens: Pick<ManagementTokens, 'newToken'>;
}

export function createActAs(deps: ActAsDeps) {
  const { store, members, tokens } = deps;

  async function actAs(principal: Principal, who: Json | undefined): Promise<IssuedToken> {
    if (typeof who !== 'string' || !who || who.length > 254)
      throw invalidRequest('user must be the id or email of a user of your workspace.', [
        { pointer: '/user', message: 'is required' },
      ]);
    const users = await store.find(IDENTITY_TABLES.workspaceUsers, 'workspaceId', principal.workspaceId);
    const target =
      users.find((u) => u.id === who) ?? users.find((u) => !u.isBot && u.email === who.trim().toLowerCase());
    if (!target) throw notFound('Workspace user');
    if (target.isBot)
      throw invalidRequest("An app's bot user acts through its app's bot token, not as a person.", [
        { pointer: '/user', message: 'is a bot user' },
      ]);
    if (
      target.id !== principal.workspaceUserId &&
      (await members.ownerOf(principal.workspaceId)) !== principal.workspaceUserId
    )
      throw forbidden('Only the owner of the workspace can act as another user.');
    const t = tokens.newToken(target, ACT_AS_TTL_SECONDS, principal);
    await store.transaction(async (tx) => tx.apply(t.change));
    return t.issued;
  }

  return { actAs };
}
