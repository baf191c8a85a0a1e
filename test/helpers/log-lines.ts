/** A test daemon's log as records: the JSON lines it wrote from character `from` on (0: all of them). */
export function logLines(d: { logs(): string }, from = 0): Array<Record<string, unknown>> {
  return d
    .logs()
    .slice(from)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
