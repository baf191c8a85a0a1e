/**
 * A cap on open connections (maxConnections): at the cap, keep-alive connections that sit
 * idle between requests are closed, longest idle first, to make room; if none is idle the new
 * connection is dropped at once. Anonymous callers cannot exhaust the daemon's file
 * descriptors by holding connections open.
 */
import type http from 'node:http';
import type net from 'node:net';
import type { Logger } from '../logger.js';

export function capConnections(server: http.Server, max: number, logger: Logger): void {
  if (!max) return;
  const open = new Set<net.Socket>();
  /** Connections that finished a response and have no request under way, in the order they went idle. */
  const idle = new Set<net.Socket>();
  let lastWarning = 0;
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    idle.delete(socket);
    res.once('finish', () => {
      if (!socket.destroyed && open.has(socket)) idle.add(socket);
    });
  });
  server.on('upgrade', (req: http.IncomingMessage) => idle.delete(req.socket));
  server.on('connection', (socket: net.Socket) => {
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      idle.delete(socket);
    });
    if (open.size <= max) return;
    let live = 0; // connections destroyed a moment ago are still in `open` until their 'close'
    for (const s of open) if (!s.destroyed) live++;
    for (const s of idle) {
      if (live <= max) break;
      idle.delete(s);
      s.destroy();
      live--;
    }
    if (live <= max) return;
    socket.destroy();
    const now = Date.now();
    if (now - lastWarning > 10_000) {
      lastWarning = now;
      logger.warn('connection refused: maxConnections reached and none of them idle', { maxConnections: max });
    }
  });
}
