/**
 * Text patterns of a suite (docs/testing.md, "Patterns"): a plain string is looked for as it is
 * written (anywhere in a message's text; as the whole of a label), and `/…/flags` is a regular
 * expression.
 */
import { must } from '../must.js';
import { messageOf } from '../unknown-values.js';
const REGEX = /^\/([\s\S]+)\/([dgimsuyv]*)$/;

export interface Matcher {
  test(s: string | undefined): boolean;
  /** The pattern as written, quoted. */
  readonly shown: string;
}

/** Why `text` is not a usable pattern (a bad regular expression), or undefined. */
export function patternError(text: string): string | undefined {
  const m = REGEX.exec(text);
  if (!m) return undefined;
  try {
    new RegExp(must(m[1]), m[2]);
    return undefined;
  } catch (e) {
    return `is not a valid regular expression: ${messageOf(e)}`;
  }
}

/** `whole`: a plain string must be all of the text (labels, titles); else it is found anywhere. */
export function matcher(pattern: string, whole: boolean): Matcher {
  const m = REGEX.exec(pattern);
  if (m) {
    const re = new RegExp(must(m[1]), must(m[2]).replace(/[gy]/g, ''));
    return { test: (s) => s !== undefined && re.test(s), shown: pattern };
  }
  return {
    test: (s) => s !== undefined && (whole ? s.trim() === pattern.trim() : s.includes(pattern)),
    shown: JSON.stringify(pattern),
  };
}

/** A string or a list of them, as a list. */
export const listOf = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : v === undefined ? [] : [String(v)]);
