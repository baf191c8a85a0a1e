/**
 * A local app stand-in for delivery tests: records every request and checks its
 * signature with its own HMAC code (an independent oracle, deliberately not the
 * daemon's sign.ts). Answers are programmable per path.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '../../src/clock.js';
import { CONDITION_MS } from './until.js';
import { eventChecker } from './event-schemas.js';

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: any;
  signatureValid: boolean;
  /** When it arrived, by the receiver's clock. */
  at: number;
}

type Answer = {
  status?: number;
  json?: unknown;
  text?: string;
  headers?: Record<string, string>;
  delayMs?: number;
  hang?: boolean;
};

export interface Receiver {
  url: string;
  received: Received[];
  secret: string;
  /** Program the answer for a path (default: 200 {}); a function may answer once what it does is done (a promise). */
  on(path: string, answer: Answer | ((r: Received) => Answer | Promise<Answer>)): void;
  /**
   * Every event received is checked against schemas/events/ (event-schemas.ts): set false in a test that sends event
   * bodies of its own making.
   */
  checkEvents: boolean;
  /** Resolves when `n` requests have arrived; rejects when an event received did not match its schema. */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  /** Stops; rejects (failing the test's teardown) when an event received did not match its schema. */
  close(): Promise<void>;
}

export function verify(secret: string, headers: http.IncomingHttpHeaders, raw: string): boolean {
  const ts = headers['x-pumble-request-timestamp'];
  const sig = headers['x-pumble-request-signature'];
  if (typeof ts !== 'string' || typeof sig !== 'string' || !/^\d+$/.test(ts)) return false;
  const want = crypto.createHmac('sha256', secret).update(`${ts}:${raw}`).digest('hex');
  return sig.length === want.length && crypto.timingSafeEqual(Buffer.from(sig), Buffer.from(want));
}

/** `clock`: the time requests are stamped with and answers are delayed by (a test's, to follow the daemon's). */
export async function startReceiver(clock: Clock = systemClock): Promise<Receiver> {
  const answers = new Map<string, Answer | ((r: Received) => Answer | Promise<Answer>)>();
  const received: Received[] = [];
  const waiters: Array<{ n: number; resolve: (r: Received[]) => void }> = [];
  const hanging = new Set<http.ServerResponse>();
  const self = { secret: '' } as { secret: string };
  const events = eventChecker();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const rec: Received = {
        path: req.url ?? '',
        headers: req.headers,
        raw,
        body,
        signatureValid: verify(self.secret, req.headers, raw),
        at: clock.now(),
      };
      received.push(rec);
      if ((self as { checkEvents?: boolean }).checkEvents) events.see(body);
      for (const w of [...waiters])
        if (received.length >= w.n) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(received.slice());
        }
      const a = answers.get(rec.path) ?? {};
      void Promise.resolve(typeof a === 'function' ? a(rec) : a).then((ans) => answer(res, ans));
    });
  });
  function answer(res: http.ServerResponse, ans: Answer): void {
    if (ans.hang) {
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      return;
    }
    const send = () => {
      res.writeHead(ans.status ?? 200, {
        'content-type': ans.text !== undefined ? 'text/plain' : 'application/json',
        ...ans.headers,
      });
      res.end(ans.text !== undefined ? ans.text : JSON.stringify(ans.json ?? {}));
    };
    if (ans.delayMs) clock.setTimeout(send, ans.delayMs);
    else send();
  }
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(self, {
    url,
    received,
    on: (path: string, a: Answer | ((r: Received) => Answer | Promise<Answer>)) => void answers.set(path, a),
    checkEvents: true,
    waitFor: (n: number, timeoutMs = CONDITION_MS) =>
      new Promise<Received[]>((resolve, reject) => {
        if (received.length >= n) return resolve(received.slice());
        const w = { n, resolve };
        waiters.push(w);
        setTimeout(() => reject(new Error(`only ${received.length} of ${n} requests arrived`)), timeoutMs).unref();
      }).then((r) => (events.assert(), r)),
    async close() {
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      events.assert();
    },
  });
}
