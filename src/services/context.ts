import type { Store } from '../store/types.js';
import type { Sealer } from '../crypto.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Config } from '../config.js';

/** What every service receives: no express, no ws, no fs. */
export interface ServiceContext {
  store: Store;
  sealer: Sealer;
  /** HS256 key for management tokens. */
  jwtKey: Buffer;
  clock: Clock;
  logger: Logger;
  config: Config;
}
