/**
 * The Transport for apps with `socketMode: true` (wire-protocol.md §6): one attempt is one text
 * frame `{"payload": <the §5 body>, "correlation_id": "…"}` on one of the app's open
 * connections (round robin), resolved by the app's reply with that correlation id or by the
 * budget. Events get no reply: an event attempt is acked once its frame was written.
 * The delivery engine builds the payload and logs the attempt; this module only carries it.
 */
import { performance } from 'node:perf_hooks';
import { newId } from '../crypto.js';
import type { SocketReply, SocketSessions } from '../services/socket-sessions.js';
import type { AttemptResult, SendRequest, Transport } from './types.js';

export interface SocketTransport extends Transport {
  /** Open connections of the app (0 when none). */
  connections(appId: string): number;
}

/** The reply of §6.5 as an attempt outcome, with the same classes as HTTP mode. */
export function classifyReply(r: SocketReply): Omit<AttemptResult, 'latencyMs'> {
  const base = { status: r.status, excerpt: r.excerpt };
  if (r.status >= 200 && r.status < 300) {
    if (r.hasBody) return { ...base, outcome: 'response', body: r.body };
    return r.message ? { ...base, outcome: 'acked', message: r.message, body: { message: r.message } } : { ...base, outcome: 'acked', body: {} };
  }
  if (r.status >= 400) return r.message ? { ...base, outcome: 'nacked', message: r.message, body: { message: r.message } } : { ...base, outcome: 'nacked', error: `the app answered status ${r.status} without a message` };
  return { ...base, outcome: 'http_error', error: `the app answered status ${r.status}` };
}

export function createSocketTransport(sessions: SocketSessions): SocketTransport {
  // Correlation ids need to be unique, not secret (the connection is already authenticated):
  // a random per-daemon prefix and a counter, cheaper than CSPRNG bytes per frame.
  const prefix = newId('cor', 9) + '_';
  let seq = 0;
  function send(req: SendRequest): Promise<AttemptResult> {
    const t0 = performance.now();
    const conn = sessions.pick(req.app.id);
    if (!conn) return Promise.resolve({ outcome: 'no_connection', latencyMs: 0, error: 'the app has no open socket-mode connection' });
    const correlationId = prefix + (++seq).toString(36);
    const frame = JSON.stringify({ payload: req.payload, correlation_id: correlationId });
    return new Promise<AttemptResult>((resolve) => {
      let done = false;
      let cancel = () => {};
      const finish = (r: Omit<AttemptResult, 'latencyMs'>) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        cancel();
        resolve({ ...r, latencyMs: Math.round((performance.now() - t0) * 10) / 10 });
      };
      const timer = setTimeout(() => finish({ outcome: 'timeout', error: `no answer within ${req.budgetMs} ms` }), Math.max(0, req.budgetMs));
      if (req.interactive) {
        cancel = sessions.expectReply(
          conn,
          correlationId,
          (reply) => finish(classifyReply(reply)),
          (why) => finish({ outcome: 'connection_error', error: why }),
        );
      }
      if (done) return;
      try {
        conn.send(frame, (err) => {
          if (err) finish({ outcome: 'connection_error', error: 'the frame could not be written to the connection' });
          else if (!req.interactive) finish({ outcome: 'acked', body: {} });
        });
      } catch {
        finish({ outcome: 'connection_error', error: 'the frame could not be written to the connection' });
      }
    });
  }
  return { send, connections: (appId) => sessions.count(appId) };
}
