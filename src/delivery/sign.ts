/**
 * The one implementation of request signing (docs/protocol.md §5):
 * lowercase hex HMAC-SHA256(signingSecret, timestamp + ":" + rawBody), timestamp in
 * epoch milliseconds, over the exact bytes sent. A pure function of its inputs.
 */
import crypto from 'node:crypto';

export const TIMESTAMP_HEADER = 'x-pumble-request-timestamp';
export const SIGNATURE_HEADER = 'x-pumble-request-signature';
export const DELIVERY_ID_HEADER = 'x-appreg-delivery-id';
export const RETRY_NUM_HEADER = 'x-appreg-retry-num';

export function signature(signingSecret: string, timestamp: string, rawBody: string | Buffer): string {
  return crypto.createHmac('sha256', signingSecret).update(timestamp).update(':').update(rawBody).digest('hex');
}

/** Headers of one signed call; a retry calls this again with a fresh time. */
export function signedHeaders(signingSecret: string, rawBody: string | Buffer, nowMs: number): Record<string, string> {
  const timestamp = String(Math.floor(nowMs));
  return { [TIMESTAMP_HEADER]: timestamp, [SIGNATURE_HEADER]: signature(signingSecret, timestamp, rawBody) };
}
