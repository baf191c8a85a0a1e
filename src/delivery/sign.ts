/**
 * The one implementation of request signing (docs/protocol.md §5):
 * lowercase hex HMAC-SHA256(signingSecret, timestamp + ":" + rawBody), timestamp in
 * epoch milliseconds, over the exact bytes sent. A function of its inputs only: the key kept per
 * secret below changes how it is computed, never what.
 */
import crypto, { type KeyObject } from 'node:crypto';

export const TIMESTAMP_HEADER = 'x-pumble-request-timestamp';
export const SIGNATURE_HEADER = 'x-pumble-request-signature';
export const DELIVERY_ID_HEADER = 'x-appreg-delivery-id';
export const RETRY_NUM_HEADER = 'x-appreg-retry-num';

/** Distinct signing secrets whose key is kept (a daemon signs for its apps; a probe's made-up secret passes by). */
export const KEYS_CAP = 1000;

/**
 * The HMAC key of each secret, made once (createSecretKey: the secret's UTF-8 bytes, as createHmac takes a string
 * key). createHmac with a string key encodes it and builds a key of it on every call; with a KeyObject it takes the
 * key as it is (~0.3 µs a signature less, bench/README.md). Bounded like the transport's URL parses: cleared when full.
 */
const keys = new Map<string, KeyObject>();
export function signingKey(signingSecret: string): KeyObject {
  let k = keys.get(signingSecret);
  if (k === undefined) {
    k = crypto.createSecretKey(Buffer.from(signingSecret, 'utf8'));
    if (keys.size >= KEYS_CAP) keys.clear();
    keys.set(signingSecret, k);
  }
  return k;
}

export function signature(signingSecret: string, timestamp: string, rawBody: string | Buffer): string {
  const hmac = crypto.createHmac('sha256', signingKey(signingSecret));
  // a text body is signed in one update: each update is a call into the binding and an encode of its own
  if (typeof rawBody === 'string') return hmac.update(`${timestamp}:${rawBody}`).digest('hex');
  return hmac.update(`${timestamp}:`).update(rawBody).digest('hex');
}

/** Headers of one signed call; a retry calls this again with a fresh time. */
export function signedHeaders(signingSecret: string, rawBody: string | Buffer, nowMs: number): Record<string, string> {
  const timestamp = String(Math.floor(nowMs));
  return { [TIMESTAMP_HEADER]: timestamp, [SIGNATURE_HEADER]: signature(signingSecret, timestamp, rawBody) };
}
