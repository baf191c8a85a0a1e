/**
 * The ack most replies are: `{"correlation_id":"<id>","status":<status>}`, byte for byte as the official
 * SDK writes one (JSON.stringify of those two fields). Read here without a parse; any other text —
 * other fields, another order, spaces, an escape or a control character in the id, a status that is
 * not three digits — is left to the parse, which reads it the same way this does where both apply.
 */

const HEAD = '{"correlation_id":"';
const STATUS = '","status":';
/** `STATUS`, three digits and `}`. */
const TAIL_LENGTH = STATUS.length + 4;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const ZERO = 0x30;

/**
 * Where the correlation id of a plain ack ends (`text.slice(ACK_ID_START, end)` is the id, `ackStatus(text)` the
 * status); -1 when `text` is not a plain ack.
 */
export function plainAckEnd(text: string): number {
  const end = text.length - TAIL_LENGTH;
  if (end <= HEAD.length || !text.startsWith(HEAD) || !text.startsWith(STATUS, end)) return -1;
  for (let i = HEAD.length; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === QUOTE || c === BACKSLASH) return -1;
  }
  const s = end + STATUS.length;
  if (!digit(text, s, 1) || !digit(text, s + 1, 0) || !digit(text, s + 2, 0) || text.charCodeAt(s + 3) !== 0x7d)
    return -1;
  return end;
}

/** Where a plain ack's correlation id starts. */
export const ACK_ID_START = HEAD.length;

/** The status of a text `plainAckEnd` accepted. */
export function ackStatus(text: string): number {
  const s = text.length - 4;
  return (text.charCodeAt(s) - ZERO) * 100 + (text.charCodeAt(s + 1) - ZERO) * 10 + (text.charCodeAt(s + 2) - ZERO);
}

/** Whether `text[i]` is a digit not below `min` (JSON numbers have no leading zero). */
function digit(text: string, i: number, min: number): boolean {
  const c = text.charCodeAt(i) - ZERO;
  return c >= min && c <= 9;
}
