/**
 * Looking into values whose type the code cannot know: what a `catch` caught, and JSON of an unknown
 * shape. Each helper checks instead of asserting with `as`, so a thrown string or a JSON array reads as
 * what it is rather than as a wrong guess.
 */

/** The message of what was thrown: an Error's message, or the value in words when something else was thrown. */
export function messageOf(thrown: unknown): string {
  if (thrown instanceof Error) return thrown.message;
  return typeof thrown === 'string' ? thrown : String(thrown);
}

/** The stack of what was thrown, for a log line; the value in words when it carries none. */
export function stackOf(thrown: unknown): string {
  if (thrown instanceof Error) return thrown.stack ?? thrown.message;
  return String(thrown);
}

/** The system error code (`ENOENT`, `EADDRINUSE`) of what was thrown, when it has one. */
export function errnoOf(thrown: unknown): string | undefined {
  if (typeof thrown !== 'object' || thrown === null || !('code' in thrown)) return undefined;
  const code = thrown.code;
  return typeof code === 'string' ? code : undefined;
}

/** A plain JSON object (not an array, not null): what parsed or stored JSON must be to be read by key. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` when it is a plain JSON object, else undefined: reading an optional object field. */
export function recordOr(value: unknown): Record<string, unknown> | undefined {
  return isRecord(value) ? value : undefined;
}

/** `value` when it is a string, else undefined: reading an optional text field of unknown JSON. */
export function stringOr(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * The value under `key` of `value` when it is a plain JSON object, else undefined: reading one field
 * of a stored record or of parsed JSON by a name known only at run time (an index's field).
 */
export function fieldOf(value: unknown, key: string): unknown {
  return isRecord(value) ? value[key] : undefined;
}

/**
 * The fields of `value` when it is a plain JSON object, else none: reading nested JSON of unknown
 * shape without a check at each level.
 */
export function fieldsOf(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}

/** The items of `value` when it is a list, else none. */
export function itemsOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
