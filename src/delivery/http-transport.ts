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
import type { Clock, Timer } from '../clock.js';
import { EgressDenied, type EgressPolicy } from './egress.js';
import { DELIVERY_ID_HEADER, RETRY_NUM_HEADER, SIGNATURE_HEADER, signature, TIMESTAMP_HEADER } from './sign.js';
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

const text = (b: Buffer | string | undefined): string => (typeof b === 'string' ? b : (b?.toString('latin1') ?? ''));
const cut = (v: string): string => (v.length > VALUE_CAP ? `${v.slice(0, VALUE_CAP)}…` : v);

/**
 * The headers of an answer as kept on the attempt, from undici's raw list (name, value, name, value, …): [name, value]
 * pairs, names in lower case, a repeated header's values together at its first place, at most HEADERS_CAP, each value
 * cut to VALUE_CAP characters: the order of an object of the headers, as undici's parsed form gave them before.
 */
function keptHeaders(raw: Array<Buffer | string>): Array<[string, string]> {
  if (raw.length > 4 * HEADERS_CAP) return keptByObject(raw);
  const out: Array<[string, string]> = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = text(raw[i]).toLowerCase();
    // an object lists names that read as array indexes first: such a header takes the object's way
    const c = name.charCodeAt(0);
    if (c >= 48 && c <= 57) return keptByObject(raw);
    let at = out.length - 1;
    while (at >= 0 && must(out[at])[0] !== name) at--;
    const pair: [string, string] = [name, cut(text(raw[i + 1]))];
    if (at < 0 || at === out.length - 1) out.push(pair);
    else out.splice(at + 1, 0, pair);
  }
  if (out.length > HEADERS_CAP) out.length = HEADERS_CAP;
  return out;
}

/** keptHeaders through an object of the headers (many headers, or a name that reads as an array index). */
function keptByObject(raw: Array<Buffer | string>): Array<[string, string]> {
  // no prototype: a header named like one of Object's own keys is a name like any other
  const byName: Record<string, string[]> = Object.create(null);
  for (let i = 0; i + 1 < raw.length; i += 2) (byName[text(raw[i]).toLowerCase()] ??= []).push(text(raw[i + 1]));
  const out: Array<[string, string]> = [];
  for (const name in byName)
    for (const one of must(byName[name])) {
      if (out.length >= HEADERS_CAP) return out;
      out.push([name, cut(one)]);
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

/** Distinct URLs whose parse is kept (targetOf). */
const TARGETS_CAP = 1000;

/** Where a URL sends a POST: origin, path, and the host when it is an IP address (checked before connecting). */
interface Target {
  origin: string;
  path: string;
  ip?: string;
}

/** The target of `url`, or why it is not delivered to. */
function parseTarget(url: string): Target | string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'the target URL is not valid';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `the ${u.protocol} scheme is not delivered to`;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return { origin: u.origin, path: u.pathname + u.search, ...(net.isIP(host) ? { ip: host } : {}) };
}

function failure(outcome: Outcome, error: string, t0: number): AttemptResult {
  return { outcome, error, latencyMs: Math.round((performance.now() - t0) * 10) / 10 };
}

/** `r` with the time since `t0` (set in place: `r` is the caller's own). */
function timed(r: Omit<AttemptResult, 'latencyMs'>, t0: number): AttemptResult {
  return Object.assign(r, { latencyMs: Math.round((performance.now() - t0) * 10) / 10 });
}

/**
 * One POST's answer as undici reports it, read into an AttemptResult. An object with methods, not a closure per
 * callback: this is made for every HTTP attempt. It takes undici's dispatch callbacks in their first form (raw
 * header buffers, an abort function): the newer form wraps every request in an adapter object that parses the
 * headers (and the trailers) into an object first, which the attempt then walked again (keptHeaders).
 */
class Exchange implements Dispatcher.DispatchHandler {
  timer: Timer | undefined;
  private done = false;
  private timedOut = false;
  private abort: ((e?: Error) => void) | undefined;
  private status = 0;
  private answerHeaders: Array<[string, string]> | undefined;
  private readonly chunks: Buffer[] = [];
  private size = 0;

  constructor(
    private readonly opts: HttpTransportOptions,
    private readonly t0: number,
    private readonly resolve: (r: AttemptResult) => void,
  ) {}

  private finish(r: AttemptResult): void {
    if (this.done) return;
    this.done = true;
    this.opts.clock.clear(this.timer);
    if (this.answerHeaders) r.answerHeaders = this.answerHeaders;
    this.resolve(r);
  }

  timeout(budgetMs: number): void {
    this.timedOut = true;
    this.finish(failure('timeout', `no answer within ${budgetMs} ms`, this.t0)); // before abort: it reports synchronously
    this.abort?.(new Error('budget'));
  }

  onConnect(abort: (e?: Error) => void): void {
    this.abort = abort;
    if (this.timedOut) abort(new Error('budget'));
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    this.status = statusCode;
    this.answerHeaders = keptHeaders(rawHeaders);
    return true;
  }

  onData(chunk: Buffer): boolean {
    const max = this.opts.maxResponseBytes;
    const room = max - this.size;
    if (room <= 0) return true;
    this.chunks.push(room < chunk.length ? chunk.subarray(0, room) : chunk);
    this.size += Math.min(room, chunk.length);
    if (this.size >= max) {
      // enough read: classify what we have and drop the rest
      this.finish(timed(classifyAnswer(this.status, Buffer.concat(this.chunks).toString('utf8'), true), this.t0));
      this.abort?.(new Error('response cap'));
    }
    return true;
  }

  onComplete(): void {
    const { chunks } = this;
    const text = chunks.length === 1 ? must(chunks[0]).toString('utf8') : Buffer.concat(chunks).toString('utf8');
    this.finish(timed(classifyAnswer(this.status, text, true), this.t0));
  }

  onError(e: Error): void {
    if (this.done) return;
    const { t0 } = this;
    const cause: unknown = e.cause ?? e;
    if (cause instanceof EgressDenied || e instanceof EgressDenied)
      return this.finish(failure('egress_denied', messageOf(cause), t0));
    const code = errnoOf(cause) ?? errnoOf(e) ?? '';
    if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/i.test(code))
      return this.finish(failure('connection_error', `TLS verification failed (${code})`, t0));
    this.finish(
      failure(
        'connection_error',
        code ? `could not reach the app (${code})` : `could not reach the app (${e.message})`,
        t0,
      ),
    );
  }
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

  // An app's URL is parsed once, not per attempt (a daemon sends to few URLs); bounded like the egress verdicts.
  const targets = new Map<string, Target | string>();
  const targetOf = (url: string): Target | string => {
    let t = targets.get(url);
    if (t === undefined) {
      t = parseTarget(url);
      if (targets.size >= TARGETS_CAP) targets.clear();
      targets.set(url, t);
    }
    return t;
  };

  /** A raw POST for the signature probe: the transport's own headers first, then `headers`. */
  const post = (url: string, body: string, headers: Record<string, string>, budgetMs: number) =>
    postAs(url, body, { 'content-type': 'application/json', 'user-agent': 'appreg', ...headers }, budgetMs);

  /** POST `body` to `url` with exactly `headers`, within `budgetMs`. */
  async function postAs(
    url: string,
    body: string,
    headers: Record<string, string>,
    budgetMs: number,
  ): Promise<AttemptResult> {
    const t0 = performance.now();
    const target = targetOf(url);
    if (typeof target === 'string') return failure('connection_error', target, t0);
    if (target.ip !== undefined) {
      const why = opts.egress.check(target.ip);
      if (why) return failure('egress_denied', why, t0);
    }
    const dispatcher = agent ?? (await load());
    return new Promise<AttemptResult>((resolve) => {
      const x = new Exchange(opts, t0, resolve);
      x.timer = opts.clock.setTimeout(() => x.timeout(budgetMs), budgetMs);
      // undici's low-level dispatch: no stream or promise wrapper per call (the hot path of delivery)
      dispatcher.dispatch({ origin: target.origin, path: target.path, method: 'POST', headers, body }, x);
    });
  }

  return {
    async send(req: SendRequest): Promise<AttemptResult> {
      if (!req.url)
        return { outcome: 'connection_error', error: 'the app has no URL for this kind of call', latencyMs: 0 };
      const body = req.rawPayload ?? JSON.stringify(req.payload);
      const timestamp = String(Math.floor(opts.clock.now()));
      const sig = signature(req.signingSecret, timestamp, body);
      // the headers as sent, in this order (the console's headersAsSent shows them so)
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': 'appreg',
        [TIMESTAMP_HEADER]: timestamp,
        [SIGNATURE_HEADER]: sig,
        [DELIVERY_ID_HEADER]: req.deliveryId,
      };
      if (req.retryNum > 0) headers[RETRY_NUM_HEADER] = String(req.retryNum);
      const r = await postAs(req.url, body, headers, req.budgetMs);
      // kept on the attempt so the console shows the request exactly as sent
      r.signed = { timestamp, signature: sig };
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
