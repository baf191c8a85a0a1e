/**
 * Live pages of the console: a server-sent events stream per open page. Changes are gathered
 * for a moment and sent together; a comment line keeps idle connections open; at most
 * MAX_STREAMS are open per kind of page; shutdown ends them all (an open page must not hold
 * the daemon's stop). A stream whose session was signed out (on any daemon) ends at its next
 * flush or keep-alive, whichever comes first: the session is checked before each.
 *
 * A stream resumes from what the page showed: the page renders a cursor into the stream's URL
 * (`since`), every event carries the cursor it brings the page to (`id:`, which the browser
 * sends back as Last-Event-ID when it reconnects), and a stream first subscribes, then sends
 * what changed after the cursor (`resume`), so nothing that happened between the page's render
 * and the subscription, or while the stream was down, is missed. The `retry:` line follows the
 * catch-up: whatever came before it is what the page had missed.
 */
import crypto from 'node:crypto';
import type { Request, Response } from 'express';
import type { Clock, Timer } from '../../../clock.js';
import { rateLimited } from '../../../errors.js';
import { consoleHeaders } from './common.js';

const PING_MS = 25_000;
const MAX_STREAMS = 100;

export interface LiveStream {
  /** Subscribe to the changes the page follows; call `wake` for each; return the unsubscribe. */
  subscribe(wake: () => void): () => void;
  /** Send what changed since the last flush (the stream's `res` is the caller's). */
  flush(): void | Promise<void>;
  /** Send what changed after `cursor` (the page's, or the last event's the browser got), once subscribed. */
  resume(cursor: string | undefined): void | Promise<void>;
}

/**
 * The cursor a stream resumes from: the browser's Last-Event-ID on a reconnection, else the one the page rendered
 * (`since`).
 */
export function cursorOf(req: Request): string | undefined {
  const v = req.get('last-event-id') ?? (typeof req.query.since === 'string' ? req.query.since : undefined);
  return v && v.length <= 100 ? v : undefined;
}

/** One server-sent event; `id` is the cursor it brings the page to. */
export const sse = (event: string, data: unknown, id?: string) =>
  `${id ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** A short fingerprint of what a page shows (its cursor when nothing simpler orders its changes). */
export const versionOf = (shown: string) => crypto.createHash('sha256').update(shown).digest('base64url').slice(0, 16);

/** `clock`: the gathering's and the keep-alive's timers. */
export function createLiveStreams(gatherMs: number, clock: Clock) {
  const open = new Set<Response>();
  return {
    /**
     * Answer `res` as an event stream from `cursor` on (see the top of this file) and keep it until
     * the page goes away or `signedIn` answers false.
     */
    open(res: Response, stream: LiveStream, signedIn: () => Promise<boolean>, cursor: string | undefined): void {
      if (open.size >= MAX_STREAMS) throw rateLimited(5);
      consoleHeaders(res);
      res.status(200).setHeader('content-type', 'text/event-stream; charset=utf-8');
      res.setHeader('x-accel-buffering', 'no');
      res.flushHeaders();
      open.add(res);
      let timer: Timer | undefined;
      /** Run `then` while the session lasts; end the stream once it does not. */
      const whileSignedIn = (then: () => unknown) =>
        signedIn().then(
          (still) => (still ? then() : res.end()),
          () => then(), // the store could not say: the stream goes on, and asks again next time
        );
      const flush = () => {
        timer = undefined;
        return whileSignedIn(() => stream.flush());
      };
      const unsubscribe = stream.subscribe(() => {
        timer ??= clock.setTimeout(flush, gatherMs);
      });
      // subscribed first: a change made while the catch-up reads is flushed after it (sent twice at worst)
      void Promise.resolve()
        .then(() => stream.resume(cursor))
        .catch(() => {}) // the store could not say: the next change sends the page's state anyway
        .then(() => res.writableEnded || res.write('retry: 3000\n\n'));
      const ping = clock.setInterval(() => whileSignedIn(() => res.write(': ping\n\n')), PING_MS);
      res.on('close', () => {
        open.delete(res);
        unsubscribe();
        clock.clear(ping);
        clock.clear(timer);
      });
    },
    endAll(): void {
      for (const res of open) res.end();
    },
  };
}
