/**
 * Live pages of the console: a server-sent events stream per open page. Changes are gathered
 * for a moment and sent together; a comment line keeps idle connections open; at most
 * MAX_STREAMS are open per kind of page; shutdown ends them all (an open page must not hold
 * the daemon's stop).
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
    /** Answer `res` as an event stream and keep it until the page goes away. */
    open(res: Response, stream: LiveStream): void {
      if (open.size >= MAX_STREAMS) throw rateLimited(5);
      consoleHeaders(res);
      res.status(200).setHeader('content-type', 'text/event-stream; charset=utf-8');
      res.setHeader('x-accel-buffering', 'no');
      res.flushHeaders();
      res.write('retry: 3000\n\n');
      open.add(res);
      let timer: NodeJS.Timeout | undefined;
      const flush = () => {
        timer = undefined;
        void stream.flush();
      };
      const unsubscribe = stream.subscribe(() => {
        timer ??= setTimeout(flush, gatherMs);
      });
      const ping = setInterval(() => res.write(': ping\n\n'), PING_MS);
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
