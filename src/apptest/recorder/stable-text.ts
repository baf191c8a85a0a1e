/**
 * How a recorded text is checked the way a person would check it: the values that change from run to run (ids, times,
 * dates, long numbers, a local port) are never written; what is left is looked for as text the message contains.
 */

/** Values a second run writes differently. */
const VARYING = [
  /(?:127\.0\.0\.1|localhost|\[::1\]):\d+/g, // a port of this machine
  /\b[a-z]{2,6}_[A-Za-z0-9]{6,}\b/g, // appreg's ids: msg_…, usr_…, dlv_…
  /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, // UUIDs
  /\b[0-9a-f]{24}\b/gi, // the platform's object ids
  /\b\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+Z?)?\b/g, // dates and ISO times
  /\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?[AaPp][Mm])?\b/g, // clock times
  /\b\d{5,}\b/g, // long numbers: epoch times, counters
];

const SHORTEST = 3;

/** The fixed parts of `text`: split where a varying value was. */
function fixedParts(text: string): string[] {
  let marked = text;
  for (const re of VARYING) marked = marked.replace(re, '\u0000');
  return marked.split('\u0000');
}

/**
 * What a text expectation looks for: the text itself when nothing in it varies, else its longest fixed part (trimmed);
 * undefined when no part is long enough to mean anything.
 */
export function stableText(text: string): string | undefined {
  const parts = fixedParts(text.trim())
    .map((p) => p.trim())
    .filter((p) => p.length >= SHORTEST);
  if (!parts.length) return undefined;
  return parts.reduce((a, b) => (b.length > a.length ? b : a));
}

/**
 * A looser match of `text`: its first clause (up to `:`, `;`, `.`, `!`, `?` or a new line), else its first three words;
 * the text itself when it is that short already.
 */
export function loosen(text: string): string {
  const first = text.split(/[:;.!?\n]/)[0]?.trim() ?? '';
  if (first.length >= SHORTEST && first.length < text.trim().length) return first;
  const words = text.trim().split(/\s+/);
  return words.length > 3 ? words.slice(0, 3).join(' ') : text.trim();
}
