/** The egress policy end to end: a host name is resolved once, and a denied address is never connected to. */
import t from 'tap';
import { startTestDaemon, manifest } from '../helpers/daemon.js';
import { startReceiver } from '../helpers/receiver.js';

t.test(
  'a delivery to a name that resolves to a refused address fails as egress_denied and sends nothing',
  async (t) => {
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const port = new URL(rx.url).port;
    const d = await startTestDaemon({ config: { egressAllowLoopback: false } });
    t.teardown(() => d.stop());
    const res = await d.api(`${d.mgmt}/apps`, {
      method: 'POST',
      json: manifest({
        name: 'egress-app',
        slashCommands: [{ command: '/go', url: `http://localhost:${port}/slash` }],
        offlineMessage: 'Egress App is offline',
      }),
    });
    const app = (await res.json()) as { id: string };
    const tr = await d.api(`${d.mgmt}/deliveries`, {
      method: 'POST',
      json: { appId: app.id, kind: 'slash-command', command: '/go' },
    });
    const rec = (await tr.json()) as { outcome: string; ephemeralMessage: string; attempts: Array<{ error?: string }> };
    t.equal(rec.outcome, 'egress_denied');
    t.match(rec.attempts[0]?.error, /loopback address .* egressAllowLoopback=true/, 'the reason names the setting');
    t.equal(rec.ephemeralMessage, 'Egress App is offline');
    t.equal(rx.received.length, 0, 'nothing reached the address');
  },
);
