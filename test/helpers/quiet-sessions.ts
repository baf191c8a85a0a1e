/** Socket sessions on a memory store and the given clock, with the defaults and a logger that prints only errors. */
import type { Clock } from '../../src/clock.js';
import { defaults } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { createSocketSessions } from '../../src/services/socket-sessions.js';

export function quietSessions(clock: Clock) {
  return createSocketSessions({
    store: createMemoryStore(),
    clock,
    logger: createLogger({ level: 'error', stream: { write: () => true } }),
    config: defaults,
  });
}
