/**
 * HTTP transport (docs/protocol.md §5): one signed POST per attempt, through undici.
 * undici rather than got on this path: undici's Pool was measured ~5× faster than got
 * for many small POSTs on loopback (~14.8 k vs ~2.7 k/s; see bench/delivery.ts); got stays for the
 * one-off manifest fetch. Redirects are never followed, the answer is read up to a
 * cap, TLS is verified, and the egress policy checks every resolved address.
 */
import { tooDeep } from '../json-depth.js';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Agent, Dispatcher } from 'undici';
import type { Clock } from '../clock.js';
import { EgressDenied, type EgressPolicy } from './egress.js';
import { DELIVERY_ID_HEADER, RETRY_NUM_HEADER, SIGNATURE_HEADER, signedHeaders, TIMESTAMP_HEADER } from './sign.js';
import type { AttemptResult, SendRequest, Transport } from './types.js';
import type { Outcome } from '../model/delivery.js';
import { must } from '../must.js';
import { errnoOf, messageOf, recordOr } from '../unknown-values.js';

const EXCERPT = 2048;
/** The answer's headers kept on an attempt: at most this many, each value cut to VALUE_CAP characters. */
const HEADERS_CAP = 40;
const VALUE_CAP = 512;
/**
 * Connections open at once to one origin, at the most. undici's default has no bound: every request
 * that finds no idle connection opens one, so a fan-out of 100 apps on one origin at a few posts a
 * second kept opening connections at each burst (and closing the ones past the burst once idle), the
 * connect costing both sides more than the request. Past the bound, requests wait for a connection
 * (the wait counts in their budget).
 */
const CONNECTIONS_PER_ORIGIN = 128;

/** The headers of an answer as kept on the attempt: [name, value] pairs in order (a repeated header once per value). */
function keptHeaders(headers: Record<string, string | string[] | undefined>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [name, v] of Object.entries(headers)) {
    for (const one of Array.isArray(v) ? v : v === undefined ? [] : [v]) {
      if (out.length >= HEADERS_CAP) return out;
      out.push([name.toLowerCase(), one.length > VALUE_CAP ? `${one.slice(0, VALUE_CAP)}…` : one]);
    }
  }
  return out;
}

/** How an app's HTTP answer reads (docs/protocol.md §5, how apps answer). */
export function classifyAnswer(status: number, text: string, interactive: boolean): Omit<AttemptResult, 'latencyMs'> {
  let body: unknown;
  try {
    // an answer nested deeper than the daemon accepts is kept as text only (docs/protocol.md §1)
    body = text && !tooDeep(text) ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  const obj = recordOr(body);
  const message = typeof obj?.message === 'string' && obj.message !== '' ? obj.message : undefined;
  const excerpt = text.slice(0, EXCERPT);
  // built field by field, not as `{ ...base, outcome }`: a spread clone that gains a property costs
  // a new hidden class on Node 20 (see log.ts applyEntry)
  const out: Omit<AttemptResult, 'latencyMs'> = { status, excerpt, outcome: 'http_error' };
  if (body !== undefined) out.body = body;
  if (status >= 300 && status < 400)
    return withOutcome(out, 'redirect', `the app answered a ${status} redirect (redirects are not followed)`);
  if (status === 403)
    return withOutcome(
      out,
      'signature_rejected',
      'the app refused the request (403), usually a signature check failing',
    );
  if (status >= 200 && status < 300) {
    if (interactive && obj && ('view' in obj || 'options' in obj)) return withOutcome(out, 'response');
    out.outcome = 'acked';
    if (message) out.message = message;
    return out;
  }
  if (message) {
    out.outcome = 'nacked';
    out.message = message;
    return out;
  }
  return withOutcome(out, 'http_error', `the app answered status ${status}`);
}

function withOutcome<R extends { outcome: Outcome; error?: string }>(r: R, outcome: Outcome, error?: string): R {
  r.outcome = outcome;
  if (error !== undefined) r.error = error;
  return r;
}

function failure(outcome: Outcome, error: string, t0: number): AttemptResult {
  return { outcome, error, latencyMs: Math.round((performance.now() - t0) * 10) / 10 };
}

/** `r` with the time since `t0` (set in place: `r` is the caller's own). */
function timed(r: Omit<AttemptResult, 'latencyMs'>, t0: number): AttemptResult {
  return Object.assign(r, { latencyMs: Math.round((performance.now() - t0) * 10) / 10 });
}

export interface HttpTransportOptions {
  clock: Clock;
  egress: EgressPolicy;
  maxResponseBytes: number;
  /** Connections open at once to one origin (CONNECTIONS_PER_ORIGIN unless told). */
  connectionsPerOrigin?: number;
}

export interface HttpTransport extends Transport {
  /** A raw POST for the signature probe: same policy, caller-chosen headers. */
  post(url: string, body: string, headers: Record<string, string>, budgetMs: number): Promise<AttemptResult>;
  close(): Promise<void>;
}

export function createHttpTransport(opts: HttpTransportOptions): HttpTransport {
  // undici is loaded for the first delivery, not with the daemon: it is a tenth of a start-up's CPU,
  // and a daemon restarting under socket-mode apps must listen again quickly (docs/operations.md)
  let agent: Agent | undefined;
  let loading: Promise<Agent> | undefined;
  const load = () =>
    (loading ??= import('undici').then(
      ({ Agent }) =>
        (agent = new Agent({
          connect: { lookup: opts.egress.lookup, rejectUnauthorized: true },
          connections: opts.connectionsPerOrigin ?? CONNECTIONS_PER_ORIGIN,
          keepAliveTimeout: 30_000,
          headersTimeout: 0,
          bodyTimeout: 0,
        })),
    ));

  async function post(
    url: string,
    body: string,
    headers: Record<string, string>,
    budgetMs: number,
  ): Promise<AttemptResult> {
    const t0 = performance.now();
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return failure('connection_error', 'the target URL is not valid', t0);
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:')
      return failure('connection_error', `the ${target.protocol} scheme is not delivered to`, t0);
    const host = target.hostname.replace(/^\[|\]$/g, '');
    if (net.isIP(host)) {
      const why = opts.egress.check(host);
      if (why) return failure('egress_denied', why, t0);
    }
    const dispatcher = agent ?? (await load());
    return new Promise<AttemptResult>((resolve) => {
      let done = false;
      let controller: Dispatcher.DispatchController | undefined;
      let timedOut = false;
      let status = 0;
      let answerHeaders: Array<[string, string]> | undefined;
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = (r: AttemptResult) => {
        if (done) return;
        done = true;
        opts.clock.clear(timer);
        if (answerHeaders) r.answerHeaders = answerHeaders;
        resolve(r);
      };
      const timer = opts.clock.setTimeout(() => {
        timedOut = true;
        finish(failure('timeout', `no answer within ${budgetMs} ms`, t0)); // before abort: it reports synchronously
        controller?.abort(new Error('budget'));
      }, budgetMs);
      // undici's low-level dispatch: no stream or promise wrapper per call (the hot path of delivery).
      dispatcher.dispatch(
        {
          origin: target.origin,
          path: target.pathname + target.search,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'appreg', ...headers },
          body,
        },
        {
          onRequestStart(c) {
            controller = c;
            if (timedOut) c.abort(new Error('budget'));
          },
          onResponseStart(_c, statusCode, headers) {
            status = statusCode;
            answerHeaders = keptHeaders(headers);
          },
          onResponseData(c, chunk) {
            const room = opts.maxResponseBytes - size;
            if (room <= 0) return;
            chunks.push(room < chunk.length ? chunk.subarray(0, room) : chunk);
            size += Math.min(room, chunk.length);
            if (size >= opts.maxResponseBytes) {
              // enough read: classify what we have and drop the rest
              const text = Buffer.concat(chunks).toString('utf8');
              finish(timed(classifyAnswer(status, text, true), t0));
              c.abort(new Error('response cap'));
            }
          },
          onResponseEnd() {
            const text =
              chunks.length === 1 ? must(chunks[0]).toString('utf8') : Buffer.concat(chunks).toString('utf8');
            finish(timed(classifyAnswer(status, text, true), t0));
          },
          onResponseError(_c, e) {
            if (done) return;
            const cause: unknown = e.cause ?? e;
            if (cause instanceof EgressDenied || e instanceof EgressDenied)
              return finish(failure('egress_denied', messageOf(cause), t0));
            const code = errnoOf(cause) ?? errnoOf(e) ?? '';
            if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/i.test(code))
              return finish(failure('connection_error', `TLS verification failed (${code})`, t0));
            finish(
              failure(
                'connection_error',
                code ? `could not reach the app (${code})` : `could not reach the app (${e.message})`,
                t0,
              ),
            );
          },
        },
      );
    });
  }

  return {
    async send(req: SendRequest): Promise<AttemptResult> {
      if (!req.url)
        return { outcome: 'connection_error', error: 'the app has no URL for this kind of call', latencyMs: 0 };
      const body = req.rawPayload ?? JSON.stringify(req.payload);
      const sig = signedHeaders(req.signingSecret, body, opts.clock.now());
      const headers: Record<string, string> = {
        [TIMESTAMP_HEADER]: must(sig[TIMESTAMP_HEADER]),
        [SIGNATURE_HEADER]: must(sig[SIGNATURE_HEADER]),
        [DELIVERY_ID_HEADER]: req.deliveryId,
      };
      if (req.retryNum > 0) headers[RETRY_NUM_HEADER] = String(req.retryNum);
      const r = await post(req.url, body, headers, req.budgetMs);
      // kept on the attempt so the console shows the request exactly as sent
      r.signed = { timestamp: must(sig[TIMESTAMP_HEADER]), signature: must(sig[SIGNATURE_HEADER]) };
      // Events: any 2xx is an ack (the SDK answers `ok`); modal/menu shapes only matter for interactive calls.
      if (!req.interactive && r.outcome === 'response') r.outcome = 'acked';
      return r;
    },
    post,
    close: async () => {
      if (loading) await (await loading).close();
    },
  };
}
