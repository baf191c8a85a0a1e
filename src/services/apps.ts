/** App management by manifest (docs/protocol.md §2, endpoints 1–5). */
import { expectedSecret, newId, newSecret, PREFIX, safeEqual, type ExpectedSecret } from '../crypto.js';
import { appPublished, invalidClient, notFound } from '../errors.js';
import type { Manifest } from '../validation/manifest.js';
import type { ServiceContext } from './context.js';
import { IDENTITY_TABLES, type AppRecord, type AppSecrets } from '../model/identity.js';
import type { Principal } from './identity.js';
import { isRecord } from '../unknown-values.js';

/** An app key nobody holds: an unknown app id costs the same comparison as a wrong key. */
const DUMMY_APP_KEY = 'apk_' + 'x'.repeat(43);

export type AppView = Record<string, unknown> & { id: string; published: boolean };

/** The full app object of docs/protocol.md §2: arrays and objects always present, unset optionals left out. */
function appView(app: AppRecord, secrets?: AppSecrets): AppView {
  const m = app.manifest;
  const out: Record<string, unknown> = { id: app.id };
  for (const [k, v] of Object.entries(m))
    if (v !== undefined && v !== null && k !== '$schema' && k !== 'id') out[k] = v;
  out.redirectUrls = m.redirectUrls ?? [];
  out.slashCommands = m.slashCommands ?? [];
  out.shortcuts = m.shortcuts ?? [];
  out.dynamicMenus = m.dynamicMenus ?? [];
  out.scopes = { botScopes: m.scopes?.botScopes ?? [], userScopes: m.scopes?.userScopes ?? [] };
  out.eventSubscriptions = { url: m.eventSubscriptions?.url ?? '', events: m.eventSubscriptions?.events ?? [] };
  out.published = app.published;
  if (secrets) Object.assign(out, secrets);
  // id and published are there already: set again, they keep their places in the JSON
  return { ...out, id: app.id, published: app.published };
}

/** The secrets an app's record seals (JSON of AppSecrets, sealed by this daemon's master key). */
function secretsFrom(json: string): AppSecrets {
  const s: unknown = JSON.parse(json);
  if (!isRecord(s)) throw new Error('the sealed secrets of an app are not an object');
  const { clientSecret, appKey, signingSecret } = s;
  if (typeof clientSecret !== 'string' || typeof appKey !== 'string' || typeof signingSecret !== 'string')
    throw new Error('the sealed secrets of an app lack one of its three secrets');
  return { clientSecret, appKey, signingSecret };
}

export function createAppsService(ctx: ServiceContext) {
  const { store, sealer, clock } = ctx;
  const nowIso = () => new Date(clock.now()).toISOString();
  /**
   * sealed → plain, and the client secret's digest once an exchange needed it: a pure function of
   * immutable input, so it may be kept (it decides nothing). The digest stays beside the secrets,
   * never among them: the app's JSON is made of the secrets (appView).
   */
  const secretsCache = new Map<string, { secrets: AppSecrets; clientSecret?: ExpectedSecret }>();

  function cachedSecrets(app: AppRecord): { secrets: AppSecrets; clientSecret?: ExpectedSecret } {
    let c = secretsCache.get(app.sealedSecrets);
    if (!c) {
      c = { secrets: secretsFrom(sealer.open(app.sealedSecrets)) };
      if (secretsCache.size > 10_000) secretsCache.clear();
      secretsCache.set(app.sealedSecrets, c);
    }
    return c;
  }

  function secretsOf(app: AppRecord): AppSecrets {
    return cachedSecrets(app).secrets;
  }

  /** The app's client secret as matchesSecret takes it, hashed once per app (the token endpoint's check). */
  function clientSecretOf(app: AppRecord): ExpectedSecret {
    const c = cachedSecrets(app);
    return (c.clientSecret ??= expectedSecret(c.secrets.clientSecret));
  }

  /**
   * Any app by id, regardless of owner (for OAuth and delivery). A shared read (frozen, the same
   * parse while the record is unchanged): every trigger and get reads its app, and no caller changes
   * it (measured: parsing it again was 5 % of a socket-mode round trip).
   */
  async function byId(id: string): Promise<AppRecord | undefined> {
    return typeof id === 'string'
      ? (await store.getMany([{ table: IDENTITY_TABLES.apps, id }], { shared: true }))[0]
      : undefined;
  }

  /**
   * The app whose appKey this is; 401 otherwise, with the same constant-time work for an unknown app as for a wrong
   * key.
   */
  async function byAppKey(appId: string, appKey: string | undefined): Promise<AppRecord> {
    const app = await byId(appId);
    const given = appKey ?? '';
    if (!safeEqual(given, app ? secretsOf(app).appKey : DUMMY_APP_KEY) || !app || given === '')
      throw invalidClient('The appKey does not match this app.');
    return app;
  }

  /** The caller's own app, else 404 (another user's app is indistinguishable from a missing one). */
  async function owned(p: Principal, id: string): Promise<AppRecord> {
    return ownedOf(p, id, await byId(id));
  }

  function ownedOf(p: Principal, id: string, app: AppRecord | undefined): AppRecord {
    if (!app || app.ownerId !== p.workspaceUserId) throw notFound(`App ${id}`);
    return app;
  }

  function newSecrets(): AppSecrets {
    return {
      clientSecret: newSecret(PREFIX.clientSecret),
      appKey: newSecret(PREFIX.appKey),
      signingSecret: newSecret(PREFIX.signingSecret),
    };
  }

  /** A new app of the caller's from a checked manifest (checkManifest, at the edge). */
  async function create(p: Principal, manifest: Manifest): Promise<AppView> {
    const secrets = newSecrets();
    const now = nowIso();
    const app: AppRecord = {
      id: newId(PREFIX.app, 32),
      workspaceId: p.workspaceId,
      ownerId: p.workspaceUserId,
      manifest,
      published: false,
      sealedSecrets: sealer.seal(JSON.stringify(secrets)),
      createdAt: now,
      updatedAt: now,
    };
    await store.transaction(async (tx) => tx.put(IDENTITY_TABLES.apps, app.id, app));
    return appView(app, secrets);
  }

  /**
   * Read the caller's app, check, write, as one transaction: a concurrent change (a publish on
   * another daemon while this one deletes) makes it run again on what is stored now, and its check
   * sees the change. The app is read as byId reads it (shared: one read, one commit).
   */
  const change = <R>(
    p: Principal,
    id: string,
    step: (app: AppRecord) => { next: AppRecord | null; out: R },
  ): Promise<R> =>
    store.transaction(async (tx) => {
      const [read] = await tx.getMany([{ table: IDENTITY_TABLES.apps, id }], { shared: true });
      const { next, out } = step(ownedOf(p, id, read));
      if (next) tx.put(IDENTITY_TABLES.apps, id, next);
      else tx.delete(IDENTITY_TABLES.apps, id);
      return out;
    });

  /** The caller's unpublished app with a checked manifest (checkManifest, at the edge) in place of its own. */
  async function update(p: Principal, id: string, manifest: Manifest): Promise<AppView> {
    return change(p, id, (app) => {
      // docs/protocol.md §1: 409 app_published for a delete or an update of a published app
      if (app.published) throw appPublished();
      // docs/protocol.md §2, endpoint 2: when avatarUrl is omitted, the current avatar is left unchanged.
      const avatarUrl = manifest.avatarUrl === undefined ? app.manifest.avatarUrl : manifest.avatarUrl;
      const next: AppRecord = {
        ...app,
        manifest: avatarUrl === undefined ? manifest : { ...manifest, avatarUrl },
        updatedAt: nowIso(),
      };
      return { next, out: appView(next) };
    });
  }

  /** The caller's apps, oldest first (the order they were created in). */
  async function list(p: Principal): Promise<AppView[]> {
    const mine = await store.find(IDENTITY_TABLES.apps, 'ownerId', p.workspaceUserId);
    mine.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
    return mine.map((app) => appView(app));
  }

  async function get(p: Principal, id: string): Promise<AppView> {
    const app = await owned(p, id);
    return appView(app, secretsOf(app));
  }

  // app record (a frozen shared read, never changed) → the JSON of its view with secrets
  const viewTexts = new WeakMap<AppRecord, string>();

  /**
   * get's answer as JSON text, kept with the shared read of the app while it is unchanged (measured:
   * serialising the view was a tenth of a management get's CPU). The record is handed back too.
   */
  async function getJson(p: Principal, id: string): Promise<{ app: AppRecord; json: string }> {
    const app = await owned(p, id);
    let json = viewTexts.get(app);
    if (json === undefined) {
      json = JSON.stringify(appView(app, secretsOf(app)));
      if (Object.isFrozen(app)) viewTexts.set(app, json);
    }
    return { app, json };
  }

  async function remove(p: Principal, id: string): Promise<void> {
    await change(p, id, (app) => {
      if (app.published) throw appPublished('Only an unpublished app can be deleted; unpublish it first.');
      return { next: null, out: undefined };
    });
  }

  async function rotateSecrets(p: Principal, id: string): Promise<AppSecrets> {
    return change(p, id, (app) => {
      const secrets = newSecrets();
      return {
        next: { ...app, sealedSecrets: sealer.seal(JSON.stringify(secrets)), updatedAt: nowIso() },
        out: secrets,
      };
    });
  }

  async function setPublished(p: Principal, id: string, published: boolean): Promise<AppView> {
    return change(p, id, (app) => {
      const next = { ...app, published, updatedAt: nowIso() };
      return { next, out: appView(next) };
    });
  }

  return {
    create,
    update,
    list,
    get,
    getJson,
    remove,
    rotateSecrets,
    setPublished,
    byId,
    byAppKey,
    owned,
    secretsOf,
    clientSecretOf,
  };
}

export type AppsService = ReturnType<typeof createAppsService>;
