/**
 * A cap on open connections (maxConnections): at the cap, idle keep-alive connections are
 * closed first to make room; if every connection is busy, the new one is dropped at once.
 * Anonymous callers cannot exhaust the daemon's file descriptors this way.
 */
import type http from 'node:http';
import type { Logger } from '../logger.js';

export function capConnections(server: http.Server, max: number, logger: Logger): void {
  if (!max) return;
  let open = 0;
  let lastWarning = 0;
  server.on('connection', (socket) => {
    open++;
    socket.once('close', () => open--);
    if (open <= max) return;
    server.closeIdleConnections();
    // closing is asynchronous: count what is already on its way out
    setImmediate(() => {
      if (open <= max || socket.destroyed) return;
      socket.destroy();
      const now = Date.now();
      if (now - lastWarning > 10_000) {
        lastWarning = now;
        logger.warn('connection refused: maxConnections reached and none of them idle', { maxConnections: max });
      }
    });
  });
}
