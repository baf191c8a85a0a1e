/**
 * What a delivery was about, in a word: the slash command, shortcut, event, action or view of its
 * payload (docs/protocol.md §5.2). The daemon's log line of an attempt and `appreg deliveries
 * tail` both show it. A leaf module: the CLI loads it without the rest of delivery/.
 */
export function subjectOf(payload: Record<string, unknown> | null | undefined): string {
  if (!payload) return '';
  const v = payload.slashCommand ?? payload.shortcut ?? payload.eventType ?? payload.onAction ?? (payload.view as { callbackId?: unknown } | undefined)?.callbackId;
  return typeof v === 'string' ? v : '';
}
