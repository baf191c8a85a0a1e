/** The layers the daemon runs on top of app management; each issue adds its own here. */
import type { Config } from '../config.js';
import type { Extension } from './start.js';
import { oauthExtension } from './oauth-extension.js';
import { socketExtension } from './socket-extension.js';
import { deliveryExtension } from './delivery-extension.js';

export function defaultExtensions(_config: Config): Extension[] {
  return [
    oauthExtension(), // authorization (issue 3): first, it publishes 'oauth' in deps.shared
    deliveryExtension(), // signed delivery (issue 4): publishes 'delivery' in deps.shared
    socketExtension(), // socket mode: keep LAST (its start() hands its transport to the delivery engine)
  ];
}
