/**
 * A bound on how deeply JSON may nest, checked on the raw text before it is parsed: a
 * 100,000-level body would otherwise overflow the stack when it is parsed or written back
 * out (docs/protocol.md §1). One pass, strings skipped, no allocation.
 */
import { must } from './must.js';

/** The deepest nesting of objects and arrays accepted anywhere JSON enters the daemon. */
export const MAX_JSON_DEPTH = 64;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Whether `text` (a string or UTF-8 bytes) nests objects and arrays deeper than `limit`. */
export function tooDeep(text: string | Uint8Array, limit = MAX_JSON_DEPTH): boolean {
  const at = typeof text === 'string' ? (i: number) => text.charCodeAt(i) : (i: number) => must(text[i]);
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = at(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}
