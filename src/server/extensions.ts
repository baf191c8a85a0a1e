/** The layers the daemon runs on top of app management; each issue adds its own here. */
import type { Config } from '../config.js';
import type { Extension } from './start.js';

export function defaultExtensions(_config: Config): Extension[] {
  return [];
}
