/**
 * Live pages of the console: a server-sent events stream per open page. Changes are gathered
 * for a moment and sent together; a comment line keeps idle connections open; at most
 * MAX_STREAMS are open per kind of page; shutdown ends them all (an open page must not hold
 * the daemon's stop). A stream whose session was signed out (on any daemon) ends at its next
 * flush or keep-alive, whichever comes first: the session is checked before each.
 */
import type { Response } from 'express';
import { rateLimited } from '../../../errors.js';
import { consoleHeaders } from './common.js';

const PING_MS = 25_000;
const MAX_STREAMS = 100;

export interface LiveStream {
  /** Subscribe to the changes the page follows; call `wake` for each; return the unsubscribe. */
  subscribe(wake: () => void): () => void;
  /** Send what changed since the last flush (the stream's `res` is the caller's). */
  flush(): void | Promise<void>;
}

export function createLiveStreams(gatherMs: number) {
  const open = new Set<Response>();
  return {
    /** Answer `res` as an event stream and keep it until the page goes away or `signedIn` answers false. */
    open(res: Response, stream: LiveStream, signedIn: () => Promise<boolean>): void {
      if (open.size >= MAX_STREAMS) throw rateLimited(5);
      consoleHeaders(res);
      res.status(200).setHeader('content-type', 'text/event-stream; charset=utf-8');
      res.setHeader('x-accel-buffering', 'no');
      res.flushHeaders();
      res.write('retry: 3000\n\n');
      open.add(res);
      let timer: NodeJS.Timeout | undefined;
      /** Run `then` while the session lasts; end the stream once it does not. */
      const whileSignedIn = (then: () => unknown) =>
        void signedIn().then(
          (still) => (still ? then() : res.end()),
          () => then(), // the store could not say: the stream goes on, and asks again next time
        );
      const flush = () => {
        timer = undefined;
        whileSignedIn(() => stream.flush());
      };
      const unsubscribe = stream.subscribe(() => {
        timer ??= setTimeout(flush, gatherMs);
      });
      const ping = setInterval(() => whileSignedIn(() => res.write(': ping\n\n')), PING_MS);
      res.on('close', () => {
        open.delete(res);
        unsubscribe();
        clearInterval(ping);
        if (timer) clearTimeout(timer);
      });
    },
    endAll(): void {
      for (const res of open) res.end();
    },
  };
}
