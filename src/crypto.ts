/**
 * Every secret-handling primitive of appreg in one place: ids and secrets with
 * readable prefixes, digests, constant-time comparison, sealing at rest
 * (AES-256-GCM), management tokens (JWT-shaped, HS256) and password hashing.
 */
import crypto from 'node:crypto';
import { must } from './must.js';

const scrypt = (pw: string, salt: Buffer, len: number, opts: crypto.ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) =>
    crypto.scrypt(pw, salt, len, opts, (err, key) => (err ? reject(err) : resolve(key))),
  );

/** Prefixes make a leaked value recognisable (grep) and tell kinds apart. */
export const PREFIX = {
  app: 'app',
  workspace: 'ws',
  workspaceUser: 'wu',
  bot: 'bot',
  clientSecret: 'acs',
  appKey: 'apk',
  signingSecret: 'ass',
  accessToken: 'aut',
  botToken: 'abt',
  code: 'acd',
  wsTicket: 'awt',
  session: 'asn',
  csrf: 'acf',
  delivery: 'dlv',
  installation: 'ins',
  authorization: 'auz',
} as const;

/**
 * CSPRNG bytes taken from a pool filled 4 KiB at a time, each byte handed out once (as Node's
 * randomUUID does): a call to the CSPRNG costs about as much for 32 bytes as for 4,096 (measured
 * 5-15 µs each on this machine; three secrets and an id made an app's create 20 % slower).
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolAt = 0;
function randomBytes(n: number): Buffer {
  if (n > 256) return crypto.randomBytes(n);
  if (poolAt + n > pool.length) {
    pool = crypto.randomBytes(POOL_BYTES);
    poolAt = 0;
  }
  return pool.subarray(poolAt, (poolAt += n));
}

/** A secret: 256 bits from the CSPRNG behind a readable prefix. */
export function newSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

/** An identifier; `bytes` of randomness (16 = 128 bits by default). */
export function newId(prefix: string, bytes = 16): string {
  return `${prefix}_${randomBytes(bytes).toString('base64url')}`;
}

/**
 * Whether Node has the one-shot crypto.hash (20.12 and later): a digest in one call, without a Hash
 * object per value (0.21 against 0.87 µs for a token here; a token exchange makes several).
 */
const ONE_SHOT = typeof crypto.hash === 'function';

/** SHA-256 of `value` (UTF-8), base64url: how tokens and codes are kept. */
export function sha256(value: string): string {
  return ONE_SHOT
    ? crypto.hash('sha256', value, 'base64url')
    : crypto.createHash('sha256').update(value).digest('base64url');
}

const sha256Bytes = (value: string): Buffer =>
  ONE_SHOT ? crypto.hash('sha256', value, 'buffer') : crypto.createHash('sha256').update(value).digest();

/** The side of a safeEqual that stays the same from request to request (an app's secret), hashed once. */
export interface ExpectedSecret {
  readonly digest: Buffer;
  readonly length: number;
}

export function expectedSecret(value: string): ExpectedSecret {
  return { digest: sha256Bytes(value), length: value.length };
}

/** safeEqual(given, the value `expected` was made from), hashing only `given`. */
export function matchesSecret(given: string, expected: ExpectedSecret): boolean {
  return crypto.timingSafeEqual(sha256Bytes(given), expected.digest) && given.length === expected.length;
}

/** Constant-time comparison that also hides the lengths (both sides are hashed first). */
export function safeEqual(a: string, b: string): boolean {
  return matchesSecret(a, expectedSecret(b));
}

/** HMAC-SHA256 of `text`, base64url. */
export function mac(key: Buffer, text: string): string {
  return crypto.createHmac('sha256', key).update(text).digest('base64url');
}

/** Derive independent subkeys from the master key so one key file serves every purpose. */
export function deriveKey(master: Buffer, purpose: string): Buffer {
  return Buffer.from(crypto.hkdfSync('sha256', master, Buffer.alloc(0), `appreg:${purpose}`, 32));
}

/** AES-256-GCM sealing of values that must be shown again (app secrets, bot tokens). */
export interface Sealer {
  seal(plain: string): string;
  open(sealed: string): string;
}

export function createSealer(key: Buffer): Sealer {
  if (key.length !== 32) throw new Error('sealing key must be 32 bytes');
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const c = crypto.createCipheriv('aes-256-gcm', key, iv);
      const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
      return `v1.${iv.toString('base64url')}.${ct.toString('base64url')}.${c.getAuthTag().toString('base64url')}`;
    },
    open(sealed) {
      const [v, iv, ct, tag] = sealed.split('.');
      if (v !== 'v1' || !iv || ct === undefined || !tag) throw new Error('not a sealed value');
      const d = crypto.createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      d.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8');
    },
  };
}

export interface JwtClaims {
  sub: string;
  ws: string;
  jti: string;
  iat: number;
  exp: number;
  [k: string]: unknown;
}

const JWT_HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

export function signJwt(claims: JwtClaims, key: Buffer): string {
  const body = `${JWT_HEADER}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${body}.${crypto.createHmac('sha256', key).update(body).digest('base64url')}`;
}

/** Returns the claims when the signature is ours and the token has not expired, else null. */
export function verifyJwt(token: string, key: Buffer, nowSeconds: number): JwtClaims | null {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== JWT_HEADER) return null;
  const expected = crypto.createHmac('sha256', key).update(`${parts[0]}.${parts[1]}`).digest();
  const given = Buffer.from(must(parts[2]), 'base64url');
  // only the canonical encoding: a trailing '=' or other bits in the last character are another token
  if (given.toString('base64url') !== parts[2]) return null;
  if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) return null;
  let claims: JwtClaims;
  try {
    claims = JSON.parse(Buffer.from(must(parts[1]), 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (typeof claims.exp !== 'number' || claims.exp <= nowSeconds) return null;
  if (typeof claims.sub !== 'string' || typeof claims.jti !== 'string' || typeof claims.ws !== 'string') return null;
  return claims;
}

const SCRYPT = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.randomBytes(16);
  const hash = await scrypt(password, salt, 32, SCRYPT);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [kind, n, r, p, salt, hash] = stored.split('$');
  if (kind !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const got = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return crypto.timingSafeEqual(got, expected);
}

/** A password that is easy to copy and has ~120 bits of entropy. */
export function generatePassword(): string {
  return crypto.randomBytes(15).toString('base64url');
}
