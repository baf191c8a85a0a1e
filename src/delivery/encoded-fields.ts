/**
 * The field of a body that travels as a JSON-encoded string (docs/protocol.md §5.2): an event's
 * `body`, a block interaction's `payload`. The console shows it decoded (an escaped one-line
 * string is unreadable), and a body edited there has it encoded again before it is sent.
 */
import { tooDeep } from '../json-depth.js';
import type { DeliveryKind } from '../model/delivery.js';

const ENCODED: Partial<Record<DeliveryKind, string>> = { event: 'body', 'block-interaction': 'payload' };

/** The body with its encoded field decoded (when it holds a JSON object or array), and that field's name. */
export function withFieldDecoded(
  kind: DeliveryKind,
  payload: Record<string, unknown>,
): { body: Record<string, unknown>; decoded?: string } {
  const field = ENCODED[kind];
  const text = field ? payload[field] : undefined;
  if (!field || typeof text !== 'string' || tooDeep(text)) return { body: payload };
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === 'object') return { body: { ...payload, [field]: value }, decoded: field };
  } catch {
    // not JSON: shown as the string it is
  }
  return { body: payload };
}

/** An edited body with its encoded field encoded again, when it was edited as an object (a string is sent as given). */
export function withFieldEncoded(kind: DeliveryKind, edited: Record<string, unknown>): Record<string, unknown> {
  const field = ENCODED[kind];
  if (!field || !(field in edited) || typeof edited[field] === 'string') return edited;
  return { ...edited, [field]: JSON.stringify(edited[field]) };
}
