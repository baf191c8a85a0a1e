/**
 * Caps on open connections, so that no caller can shut others out by holding connections open:
 *
 * - per address (`maxConnectionsPerAddress`; an IPv6 caller counts by its /64, which one host
 *   usually has whole): a new connection beyond it first closes that address's longest-idle
 *   keep-alive connection, else it is dropped at once. One address cannot take the whole daemon.
 * - in all (`maxConnections`): a new connection beyond it first closes the longest-idle keep-alive
 *   connection, else the oldest connection that has not finished sending its request headers
 *   (a client that opens connections and trickles headers into them holds them for nothing), and
 *   only when every open connection is in use (a request under way, a websocket) is the new one
 *   dropped.
 *
 * A connection is "awaiting headers" from when it opens until its first request's headers are
 * read; "idle" once its responses are done (a keep-alive connection that starts another request
 * is idle until that request's headers are read, so it goes first as well); "in use" meanwhile,
 * and for good once upgraded to a websocket. 0 disables a cap.
 */
import type http from 'node:http';
import type net from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Logger } from '../logger.js';
import type { Clock } from '../clock.js';

interface Conn {
  key: string;
  /** Requests whose headers were read and whose response has not ended. */
  inFlight: number;
  upgraded: boolean;
}

/** The caller a connection counts against: its IPv4 address (also when IPv4-mapped), or the /64 of its IPv6 address. */
export function addressKey(remote: string | undefined): string {
  if (!remote) return '?';
  try {
    // process: an IPv4-mapped IPv6 address comes back as its IPv4 address
    const a = ipaddr.process(remote);
    if (a instanceof ipaddr.IPv4) return a.toString();
    return `${a.parts
      .slice(0, 4)
      .map((p) => p.toString(16))
      .join(':')}::/64`;
  } catch {
    return remote;
  }
}

/** `clock`: when the last warning of each kind was logged. */
export function capConnections(
  server: http.Server,
  limits: { max: number; perAddress: number },
  logger: Logger,
  clock: Pick<Clock, 'now'>,
): void {
  const { max, perAddress } = limits;
  if (!max && !perAddress) return;
  /** Every open connection, oldest first. */
  const open = new Map<net.Socket, Conn>();
  /** Connections whose first request's headers have not been read yet, oldest first. */
  const awaitingHeaders = new Set<net.Socket>();
  /** Connections with no request under way, in the order they went idle. */
  const idle = new Set<net.Socket>();
  const byAddress = new Map<string, number>();
  const warned = { refused: 0, evicted: 0 };
  /** At most one line every 10 s per kind: a flood must not flood the log. */
  const warn = (kind: keyof typeof warned, msg: string, fields: Record<string, unknown>) => {
    const now = clock.now();
    if (now - warned[kind] > 10_000) {
      warned[kind] = now;
      logger.warn(msg, fields);
    }
  };

  const forget = (socket: net.Socket) => {
    const c = open.get(socket);
    if (!c) return;
    open.delete(socket);
    awaitingHeaders.delete(socket);
    idle.delete(socket);
    const n = (byAddress.get(c.key) ?? 1) - 1;
    if (n > 0) byAddress.set(c.key, n);
    else byAddress.delete(c.key);
  };
  /** Close a connection now; it no longer counts, even before its 'close' event. */
  const drop = (socket: net.Socket) => {
    forget(socket);
    socket.destroy();
  };
  const firstOf = (set: Set<net.Socket>, match: (s: net.Socket) => boolean = () => true) => {
    for (const s of set) if (match(s)) return s;
    return undefined;
  };

  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    const c = open.get(socket);
    if (!c) return;
    awaitingHeaders.delete(socket);
    idle.delete(socket);
    c.inFlight++;
    res.once('close', () => {
      if (--c.inFlight === 0 && !c.upgraded && open.has(socket) && !socket.destroyed) idle.add(socket);
    });
  });
  server.on('upgrade', (req: http.IncomingMessage) => {
    const c = open.get(req.socket);
    if (!c) return;
    c.upgraded = true;
    awaitingHeaders.delete(req.socket);
    idle.delete(req.socket);
  });
  server.on('connection', (socket: net.Socket) => {
    const key = addressKey(socket.remoteAddress);
    if (perAddress && (byAddress.get(key) ?? 0) >= perAddress) {
      const mine = firstOf(idle, (s) => open.get(s)?.key === key);
      if (!mine) {
        socket.destroy();
        warn(
          'refused',
          'connection refused: maxConnectionsPerAddress reached for this address and none of its connections idle',
          { address: key, maxConnectionsPerAddress: perAddress },
        );
        return;
      }
      drop(mine);
    }
    open.set(socket, { key, inFlight: 0, upgraded: false });
    awaitingHeaders.add(socket);
    byAddress.set(key, (byAddress.get(key) ?? 0) + 1);
    socket.once('close', () => forget(socket));
    if (!max || open.size <= max) return;
    const victim = firstOf(idle) ?? firstOf(awaitingHeaders, (s) => s !== socket);
    if (victim) {
      if (awaitingHeaders.has(victim))
        warn('evicted', 'maxConnections reached: closed the oldest connection still sending its request headers', {
          maxConnections: max,
          address: open.get(victim)?.key,
        });
      drop(victim);
      return;
    }
    drop(socket);
    warn('refused', 'connection refused: maxConnections reached and every connection in use', { maxConnections: max });
  });
}
