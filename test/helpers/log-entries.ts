/** Delivery log entries for tests of the log itself. */
import type { LogEntry } from '../../src/delivery/log.js';
import type { DeliveryHead } from '../../src/model/delivery.js';

/** The entry that begins event delivery `id` of `payload` (pending since `at`); `head` overrides the defaults. */
export function begunEvent(
  id: string,
  at: string,
  payload: Record<string, unknown>,
  head: Partial<DeliveryHead> = {},
): LogEntry {
  return {
    id,
    begun: {
      head: {
        id,
        kind: 'event',
        appId: 'app_1',
        appName: 'a',
        ownerId: 'wu_1',
        workspaceId: 'ws_1',
        userId: 'wu_1',
        transport: 'http',
        createdAt: at,
        ...head,
      },
      payload,
      raw: JSON.stringify(payload),
    },
    state: { at, state: 'pending' },
  };
}
