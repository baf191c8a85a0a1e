/**
 * Is secret.key the key this data directory was made with? Another valid 32-byte key would
 * otherwise be accepted at start and every later read of a sealed secret would fail (500).
 *
 * A key-check value — an HMAC of a fixed label under a key derived from the master key (so it
 * reveals nothing about the key or any other derived key) — is kept in the store (table
 * `meta`, id `keyCheck`) and compared on every start. A data directory made before the check
 * existed gets one written on its first start, but only after the key was verified another way:
 * by opening a sealed value (an app's secrets, a bot token: AES-GCM authenticates the key), or
 * else by the signature of the management token in credentials.json. With neither (no sealed
 * value and no token: nothing the key protects yet) it is trust on first use.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createSealer, deriveKey } from '../crypto.js';
import type { Store } from '../store/types.js';
import { OAUTH_TABLES } from '../model/oauth.js';
import { META, IDENTITY_TABLES } from '../model/identity.js';
import { StartupError } from './data-dir.js';
import { recordOr } from '../unknown-values.js';
import type { KeyCheckBasis, KeyCheckRecord } from '../model/identity.js';

const KEY_CHECK_ID = 'keyCheck';
const LABEL = 'appreg key check v1';

const checkValue = (master: Buffer): string =>
  crypto.createHmac('sha256', deriveKey(master, 'key-check')).update(LABEL).digest('base64url');

function sameValue(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && crypto.timingSafeEqual(x, y);
}

/** The refusal of a wrong key; `where`: this data directory, or the database every daemon of it shares. */
const wrongKey = (keyFile: string, why: string, where: string) =>
  new StartupError(
    `refusing to start: the key file ${keyFile} is not the key ${where} was made with (${why}); restore the secret.key that belongs to it, or give its path with appreg serve --key-file <file>${where === 'the database' ? ' (every daemon of a database needs the key of the first)' : ''}`,
    'key',
  );

/** One sealed value of the store, if any (read once per store: only while it has no key-check value yet). */
async function firstSealed(store: Pick<Store, 'all'>): Promise<string | undefined> {
  for (const app of await store.all(IDENTITY_TABLES.apps))
    if (typeof app.sealedSecrets === 'string') return app.sealedSecrets;
  for (const inst of await store.all(OAUTH_TABLES.installations))
    if (typeof inst.sealedBotToken === 'string') return inst.sealedBotToken;
  return undefined;
}

/** The management token in credentials.json, if there is one that looks like ours. */
function credentialsToken(file: string | undefined): string | undefined {
  if (!file) return undefined;
  try {
    const tok = recordOr(JSON.parse(fs.readFileSync(file, 'utf8')))?.authToken;
    return typeof tok === 'string' && tok.split('.').length === 3 ? tok : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the token's HS256 signature is made with this master key's JWT key (expiry does not matter here). */
function signedWith(token: string, master: Buffer): boolean {
  const [h, p, sig] = token.split('.');
  if (h === undefined || p === undefined || sig === undefined) return false;
  const expected = crypto.createHmac('sha256', deriveKey(master, 'jwt')).update(`${h}.${p}`).digest('base64url');
  return sameValue(sig, expected);
}

interface KeyCheckOutcome {
  /** 'matched': compared with the stored value; otherwise the value was just written, on this basis. */
  how: 'matched' | KeyCheckBasis;
}

/**
 * What `verifyMasterKey` found: the key matched the stored value, or it is right on `basis` and the value is still to
 * be written.
 */
export type KeyVerdict = { how: 'matched' } | { how: KeyCheckBasis; record: KeyCheckRecord };

/** The reads the check makes (a store, or the embedded store's files read before anything is written). */
type KeyReads = Pick<Store, 'get' | 'all' | 'count'>;

/**
 * The key file (named in a refusal), credentials.json (its token may verify the key), and where the value lives, for
 * the refusal's words.
 */
interface KeyOpts {
  keyFile: string;
  credentialsFile?: string;
  where?: 'the database' | 'this data directory';
  now?: () => Date;
}

/**
 * Compare the master key with the store's key-check value, reading only: a wrong key throws
 * StartupError (reason 'key'); a store without a value yet gets the record to write, once the key
 * was verified another way (see the top of this file). start.ts calls this before any file of the
 * data directory is written, so a refused start changes nothing.
 */
export async function verifyMasterKey(store: KeyReads, master: Buffer, opts: KeyOpts): Promise<KeyVerdict> {
  const expected = checkValue(master);
  const where = opts.where ?? 'this data directory';
  const rec = await store.get(META, KEY_CHECK_ID);
  if (rec) {
    const value = 'value' in rec ? rec.value : undefined;
    if (typeof value !== 'string' || !sameValue(value, expected))
      throw wrongKey(opts.keyFile, 'its key-check value does not match', where);
    return { how: 'matched' };
  }
  let basis: KeyCheckBasis;
  const [sealed, workspaces] = await Promise.all([firstSealed(store), store.count(IDENTITY_TABLES.workspaces)]);
  const token = credentialsToken(opts.credentialsFile);
  if (sealed !== undefined) {
    try {
      createSealer(deriveKey(master, 'seal')).open(sealed);
    } catch {
      throw wrongKey(opts.keyFile, 'it cannot open the secrets sealed in the data file', where);
    }
    basis = 'sealed-value';
  } else if (token !== undefined && workspaces > 0) {
    if (!signedWith(token, master))
      throw wrongKey(opts.keyFile, 'it did not sign the management token in credentials.json', where);
    basis = 'credentials-token';
  } else {
    basis = workspaces > 0 ? 'trust-on-first-use' : 'new';
  }
  return {
    how: basis,
    record: { id: KEY_CHECK_ID, value: expected, createdAt: (opts.now?.() ?? new Date()).toISOString(), basis },
  };
}

/**
 * Write the key-check value `verifyMasterKey` found missing, if still missing: of daemons started at
 * once on a new database with different keys, all but the first compare with the value it wrote
 * (and refuse to start).
 */
export async function recordMasterKey(
  store: Store,
  verdict: KeyVerdict,
  master: Buffer,
  opts: KeyOpts,
): Promise<KeyCheckOutcome> {
  if (!('record' in verdict)) return verdict;
  const { record } = verdict;
  const written = await store.transaction(async (tx) => {
    if (await tx.get(META, KEY_CHECK_ID)) return false;
    tx.put(META, KEY_CHECK_ID, record);
    return true;
  });
  // another daemon wrote the value first: compare with it
  if (!written) return checkMasterKey(store, master, opts);
  return { how: verdict.how };
}

/** verifyMasterKey, then recordMasterKey: the whole check on a store already open for writing. */
export async function checkMasterKey(store: Store, master: Buffer, opts: KeyOpts): Promise<KeyCheckOutcome> {
  return recordMasterKey(store, await verifyMasterKey(store, master, opts), master, opts);
}
