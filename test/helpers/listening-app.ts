/**
 * A daemon with an app installed that listens for events at a receiver (signatures checked), everything stopped when
 * the test ends.
 */
import { startTestDaemon } from './daemon.js';
import { startReceiver } from './receiver.js';
import { installPlatformApp } from './platform-client.js';

export async function daemonWithListener(t: { teardown(fn: () => unknown): void }, events: string[]) {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  rx.on('/events', { text: 'ok' });
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = await installPlatformApp(d, { events, eventsUrl: `${rx.url}/events` });
  rx.secret = app.app.signingSecret;
  return { rx, d, app };
}
