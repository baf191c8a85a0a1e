/**
 * A value the code knows is there (an index within bounds, a regular expression's group that
 * matched, a key just set), checked instead of asserted with `!`: when the reasoning is wrong the
 * error names what was missing, where an assertion would let `undefined` travel on.
 */
export function must<T>(value: T, what = 'a value'): NonNullable<T> {
  if (value === undefined || value === null) throw new Error(`internal: ${what} was expected here and is missing`);
  return value;
}
