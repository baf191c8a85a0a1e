/**
 * The made-up bodies of test events (`deliver-test --kind event` without a `body`): one per event
 * type, each of the shape the daemon sends for real and schemas/events/ describes (docs/protocol.md
 * §5.3), about the caller (the user concerned, the author, who acted) in the channel asked for (by
 * default general). APP_UNAUTHORIZED and APP_UNINSTALLED carry the app's real installation and
 * authorization ids. Every other id that names no real thing (a message, a group) is fresh.
 */
import { newId } from '../crypto.js';
import type { AppRecord } from '../model/identity.js';
import { authorizationId, installationId } from '../model/oauth.js';
import { userEventBody } from '../model/events.js';

interface About {
  app: AppRecord;
  workspaceId: string;
  userId: string;
  channelId: string;
  now: Date;
}

type Maker = (x: About, ty: string) => Record<string, unknown>;

const message: Maker = (x, ty) => ({
  mId: newId('msg', 12),
  wId: x.workspaceId,
  cId: x.channelId,
  aId: x.userId,
  tx: 'Hello from appreg',
  bl: [],
  ty,
  ts: x.now.toISOString(),
  tsm: x.now.getTime(),
  f: [],
  att: [],
  md: [],
  mc: [],
  mu: [],
  e: ty === 'UPDATED_MESSAGE',
  eph: false,
});

const TEST_USER = { name: 'Test User', email: 'test.user@appreg.example' };

const user: Maker = (x, ty) => ({
  ...userEventBody({ id: x.userId, workspaceId: x.workspaceId, ...TEST_USER }),
  ty,
  ...(ty === 'WORKSPACE_USER_UPDATED' ? { puE: TEST_USER.email, cb: x.userId, atz: true } : {}),
});

const group: Maker = (x, ty) => ({
  ...(ty === 'WORKSPACE_USER_GROUP_UPDATED' ? { uId: x.userId } : {}),
  wId: x.workspaceId,
  cbId: x.userId,
  id: newId('grp', 12),
  n: 'Test group',
  h: 'test-group',
  d: '',
  di: false,
  uIds: [x.userId],
  cIds: [],
  ty,
});

const MAKERS: Record<string, Maker> = {
  NEW_MESSAGE: message,
  UPDATED_MESSAGE: message,
  REACTION_ADDED: (x, ty) => ({
    wId: x.workspaceId,
    cId: x.channelId,
    mId: newId('msg', 12),
    mat: x.userId,
    uId: x.userId,
    rc: ':thumbsup:',
    ty,
  }),
  CHANNEL_CREATED: (x, ty) => ({
    wId: x.workspaceId,
    cId: x.channelId,
    cN: 'test-channel',
    cU: [x.userId],
    cT: 'PUBLIC',
    ty,
  }),
  CHANNEL_ARCHIVED: (x, ty) => ({ m: [x.userId], wId: x.workspaceId, cId: x.channelId, v: true, ty, uId: x.userId }),
  CHANNEL_DELETED: (x, ty) => ({ m: [x.userId], wId: x.workspaceId, cId: x.channelId, ty }),
  WORKSPACE_USER_JOINED: user,
  WORKSPACE_USER_UPDATED: user,
  WORKSPACE_USER_GROUP_CREATED: group,
  WORKSPACE_USER_GROUP_UPDATED: group,
  APP_UNAUTHORIZED: (x) => ({
    id: authorizationId(x.app.id, x.userId),
    app: x.app.id,
    appInstallation: installationId(x.app.id, x.workspaceId),
    workspaceUser: x.userId,
    workspace: x.workspaceId,
    grantedScopes: [],
    accessGranted: false,
  }),
  APP_UNINSTALLED: (x) => ({
    id: installationId(x.app.id, x.workspaceId),
    app: x.app.id,
    workspace: x.workspaceId,
    installedBy: x.userId,
    botUser: x.app.manifest.bot ? newId('bot', 12) : null,
    uninstalledAt: x.now.toISOString(),
  }),
};

/** The APP_ events' bodies carry no request id (the SDK declares none); every other event's does. */
const NO_RID = new Set(['APP_UNAUTHORIZED', 'APP_UNINSTALLED']);

/** A made-up body of event `ty` (a known event: the caller checked). */
export function testEventBody(ty: string, x: About): Record<string, unknown> {
  const make = MAKERS[ty];
  if (!make) return { ty };
  const body = make(x, ty);
  return NO_RID.has(ty) ? body : { ...body, rid: newId('req', 12) };
}
