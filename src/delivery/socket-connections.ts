/**
 * The socket-mode connections the delivery layer sends through, as it needs them: defined here,
 * kept by services/socket-sessions.ts (which holds no websocket either: the server layer owns the
 * sockets) and handed to the socket transport, queue and relay by the composition root.
 */

/** One open connection, as the server layer exposes it (no ws types here). */
export interface SocketConn {
  readonly id: string;
  readonly appId: string;
  /** Send a text frame; `cb` runs once the frame was handed to the OS (or failed). */
  send(text: string, cb?: (err?: Error) => void): void;
  close(code: number, reason: string): void;
  /** False once a close began (the connection stays registered until it has closed). */
  isOpen?(): boolean;
}

/** A reply of the app to a frame the daemon sent (§6.5). */
export interface SocketReply {
  correlationId: string;
  status: number;
  message?: string;
  /** Present for "response" replies (modal / menu options). */
  body?: unknown;
  hasBody: boolean;
  /** Capped text of the reply frame, as received, for the delivery log. */
  excerpt: string;
}

/** Who awaits the reply to one frame (one object per attempt: no closures on the hot path). */
export interface ReplyWaiter {
  readonly conn: SocketConn;
  reply(r: SocketReply): void;
  gone(why: string): void;
}

/** The open connections of the apps, as delivery uses them. */
export interface SocketConnections {
  /** How many connections of the app are registered on this daemon (open or closing). */
  count(appId: string): number;
  /** How many of them are open (no close begun). */
  openCount(appId: string): number;
  /** `count` of every app with a connection here. */
  counts(): Record<string, number>;
  /** One open connection of the app (round robin), if any. */
  pick(appId: string): SocketConn | undefined;
  /** Call `cb` whenever a connection of any app opened; returns the unsubscribe. */
  onAnyConnect(cb: (appId: string) => void): () => void;
  /** Call `cb` whenever a connection of any app closed; returns the unsubscribe. */
  onAnyClose(cb: (appId: string) => void): () => void;
  /** Run `cb` (and wait for it) before an app's websocket upgrade is answered; returns the removal. */
  beforeAccept(cb: (appId: string) => Promise<void>): () => void;
  /** Hand the reply with `correlationId` to `waiter` (at once `gone` when its connection has closed). */
  expectReply(correlationId: string, waiter: ReplyWaiter): void;
  /** No reply is awaited any more for `correlationId` (one that comes is late). */
  forget(correlationId: string): void;
}
