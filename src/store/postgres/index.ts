/** What the daemon loads when a database URL is configured (start.ts imports it only then). */
export { openPostgresStore } from './pg-store.js';
export { redactUrl } from './url.js';
