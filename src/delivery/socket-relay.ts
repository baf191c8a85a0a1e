/**
 * Socket mode across daemons: an app's websocket is held by one daemon, but a trigger or an event
 * for it may reach any daemon of the store. Each daemon records the apps it holds connections of
 * (table socketHolders, id `${appId}:${instanceId}`, with an expiry a heartbeat pushes on, removed
 * when its last connection closes or the daemon stops) and how many it holds, written again soon
 * after a connection opens or closes, so any daemon can count an app's connections across all of
 * them (`connections`). A daemon without a connection of the app
 * but with a live holder relays the attempt to the holder over store.publish, with a correlation
 * id, and waits for the holder's answer on the reply channel within what is left of the budget.
 * Messages larger than a notification can carry go through a short-lived record named in it.
 */
import { performance } from 'node:perf_hooks';
import { newId } from '../crypto.js';
import type { Clock, Timer } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Change, Store } from '../store/types.js';
import type { SocketConnections } from './socket-connections.js';
import type { AttemptResult, SocketSendRequest } from './types.js';
import type { HolderRecord } from '../model/delivery.js';
import { must } from '../must.js';
import { messageOf, recordOr } from '../unknown-values.js';

export const SOCKET_HOLDERS_TABLE = 'socketHolders';
/** Relay messages too big for a notification (deleted by their reader; swept when left behind). */
const RELAY_TABLE = 'socketRelay';
const REQUESTS = 'socket_relay';
const REPLIES = 'socket_relay_reply';
/** How long an app whose websocket upgrade is being answered counts as held without a connection. */
const ACCEPTING_MS = 10_000;
/** Bytes a notification may carry (the store's limit is 7,000; the envelope needs some). */
const INLINE_MAX = 6500;

interface RelayedRequest {
  rid: string;
  from: string;
  to: string;
  appId: string;
  deliveryId: string;
  attemptId: string;
  rawPayload: string;
  interactive: boolean;
  budgetMs: number;
  retryNum: number;
}
interface RelayReply {
  rid: string;
  to: string;
  result?: AttemptResult;
  noSession?: true;
}
/** On the channel: the message itself, or the id of the record holding it. */
type Envelope<T> = { to: string; msg?: T; ref?: string };

export interface SocketRelayDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  instanceId: string;
  sessions: SocketConnections;
  /** An attempt on this daemon's own connections (the queue first, for events). */
  sendLocal: (req: SocketSendRequest) => Promise<AttemptResult>;
  /** Each heartbeat, for every app held here (the queue sends what another daemon kept meanwhile). */
  onHeld?: (appId: string) => void;
  /** How long a holder record lives without a heartbeat (default 15 s; the heartbeat runs at a third of it). */
  holderTtlMs?: number;
}

export function createSocketRelay(deps: SocketRelayDeps) {
  const { store, clock, instanceId: me, sessions, sendLocal } = deps;
  const log = deps.logger.child({ component: 'socket-relay' });
  const ttlMs = deps.holderTtlMs ?? 15_000;
  /** Apps this daemon has a holder record for. */
  const held = new Set<string>();
  /** Relayed attempts awaiting the holder's answer, by correlation id. */
  const awaiting = new Map<string, (r: RelayReply) => void>();
  const holderId = (appId: string) => `${appId}:${me}`;
  // before its first connection is registered the count is still 0: the record is written for that one
  const holder = (appId: string): HolderRecord => ({
    id: holderId(appId),
    appId,
    instanceId: me,
    expiresAt: clock.now() + ttlMs,
    connections: Math.max(1, sessions.count(appId)),
  });
  const fail = (e: unknown) => log.error('socket relay failed', { error: messageOf(e) });

  /**
   * Holder records being written, so that a second connection of the app waits for the first's. A
   * record is written once this daemon listens for relayed requests: another daemon that finds it
   * may relay at once.
   */
  const holding = new Map<string, Promise<void>>();
  function hold(appId: string): Promise<void> {
    const pending = holding.get(appId);
    if (pending) return pending;
    if (held.has(appId)) return Promise.resolve();
    const p = store
      .subscribed()
      .then(() => store.commit([{ table: SOCKET_HOLDERS_TABLE, id: holderId(appId), value: holder(appId) }]))
      .then(() => {
        held.add(appId);
      })
      .finally(() => holding.delete(appId));
    holding.set(appId, p);
    return p;
  }

  /** Push the expiry of the apps still connected here; forget those whose connections all closed. */
  async function heartbeat(): Promise<void> {
    for (const appId of Object.keys(sessions.counts())) held.add(appId);
    const now = clock.now();
    for (const [a, until] of accepting) if (until <= now) accepting.delete(a); // upgrades that never connected
    const gone = [...held].filter((a) => sessions.count(a) === 0 && !((accepting.get(a) ?? 0) > now));
    for (const a of gone) held.delete(a);
    const changes = [...held].map((a): Change => ({ table: SOCKET_HOLDERS_TABLE, id: holderId(a), value: holder(a) }));
    changes.push(...gone.map((a): Change => ({ table: SOCKET_HOLDERS_TABLE, id: holderId(a), value: null })));
    if (changes.length) await store.commit(changes);
    for (const a of held) deps.onHeld?.(a);
    // leftovers of relays whose reader never came (its daemon died)
    const stale = (await store.all(RELAY_TABLE)).filter((r) => r.expiresAt <= now);
    if (stale.length) await store.commit(stale.map((r) => ({ table: RELAY_TABLE, id: r.id, value: null })));
  }

  async function post<T>(channel: string, to: string, msg: T, ttl: number): Promise<void> {
    const inline = JSON.stringify({ to, msg } satisfies Envelope<T>);
    if (Buffer.byteLength(inline) <= INLINE_MAX) return store.publish(channel, inline);
    const ref = newId('rly', 12);
    await store.commit([
      { table: RELAY_TABLE, id: ref, value: { id: ref, msg, expiresAt: clock.now() + ttl + 60_000 } },
    ]);
    await store.publish(channel, JSON.stringify({ to, ref } satisfies Envelope<T>));
  }

  /** The message of an envelope addressed to this daemon (undefined: not ours, or unreadable). */
  async function open<T>(payload: string): Promise<T | undefined> {
    // the one place a relay message becomes its type: each channel carries only what post<T> of its own T wrote
    const env = JSON.parse(payload) as Envelope<T>;
    if (env.to !== me) return undefined;
    if (env.msg !== undefined) return env.msg;
    if (!env.ref) return undefined;
    const rec = await store.get(RELAY_TABLE, env.ref);
    if (rec) await store.commit([{ table: RELAY_TABLE, id: env.ref, value: null }]);
    // a relay record holds the message its envelope was sent for, of the envelope's type
    return rec?.msg as T | undefined;
  }

  /** A relayed attempt, on the holder: made on its own connections, answered on the reply channel. */
  async function serve(m: RelayedRequest): Promise<void> {
    const reply = async (r: Omit<RelayReply, 'rid' | 'to'>) =>
      post<RelayReply>(REPLIES, m.from, { rid: m.rid, to: m.from, ...r }, m.budgetMs);
    if (sessions.openCount(m.appId) === 0) return reply({ noSession: true });
    // the transport only needs the app's id (socket mode: no URL, no signing secret)
    const req: SocketSendRequest = {
      deliveryId: m.deliveryId,
      attemptId: m.attemptId,
      app: { id: m.appId },
      payload: recordOr(JSON.parse(m.rawPayload)) ?? {}, // the payload the requester sent: an object
      rawPayload: m.rawPayload,
      interactive: m.interactive,
      budgetMs: m.budgetMs,
      retryNum: m.retryNum,
      signingSecret: '',
    };
    return reply({ result: await sendLocal(req) });
  }

  const unsubscribe = [
    store.subscribe(REQUESTS, (payload) => {
      open<RelayedRequest>(payload)
        .then((m) => m && serve(m))
        .catch(fail);
    }),
    store.subscribe(REPLIES, (payload) => {
      open<RelayReply>(payload)
        .then((m) => m && awaiting.get(m.rid)?.(m))
        .catch(fail);
    }),
  ];

  // The holder record is written before the upgrade is answered (so a trigger through another daemon
  // finds this one at once), and again on connect in case it went meanwhile. An app whose websocket
  // is being accepted has no connection registered yet: the heartbeat does not take it for gone.
  const accepting = new Map<string, number>();
  const unprepare = sessions.beforeAccept((appId) => {
    accepting.set(appId, clock.now() + ACCEPTING_MS);
    return hold(appId);
  });
  // A connection opened or closed: the holder records say so within a moment, not at the next heartbeat.
  let resync: Timer | null = null;
  const changed = () => {
    if (resync) return;
    resync = clock.setTimeout(() => {
      resync = null;
      return heartbeat().catch(fail);
    }, 100);
  };
  const unwatch = [
    sessions.onAnyConnect((appId) => {
      accepting.delete(appId);
      hold(appId).catch(fail);
      changed();
    }),
    sessions.onAnyClose(changed),
  ];

  /** The app's open connections on every daemon: this one's now, the others' as their live holder records say. */
  async function connections(appId: string): Promise<number> {
    const now = clock.now();
    const others = (await store.find(SOCKET_HOLDERS_TABLE, 'appId', appId)).filter(
      (h) => h.expiresAt > now && h.instanceId !== me,
    );
    return (
      sessions.count(appId) + others.reduce((n, h) => n + (typeof h.connections === 'number' ? h.connections : 1), 0)
    );
  }

  /**
   * The attempt made by the daemon holding a connection of the app, when this one holds none;
   * undefined when no daemon does (the caller goes on as for an app with no connection).
   */
  async function relay(req: SocketSendRequest): Promise<AttemptResult | undefined> {
    const t0 = performance.now();
    const now = clock.now();
    const live = (await store.find(SOCKET_HOLDERS_TABLE, 'appId', req.app.id)).filter(
      (h) => h.expiresAt > now && h.instanceId !== me,
    );
    if (!live.length) return undefined;
    const to = must(live[Math.floor(Math.random() * live.length)]).instanceId;
    const rid = newId('rel', 12);
    const left = () => req.budgetMs - (performance.now() - t0);
    const answer = new Promise<RelayReply | undefined>((resolve) => {
      const timer = clock.setTimeout(() => resolve(undefined), Math.max(0, left()));
      awaiting.set(rid, (r) => {
        clock.clear(timer);
        resolve(r);
      });
    });
    const msg: RelayedRequest = {
      rid,
      from: me,
      to,
      appId: req.app.id,
      deliveryId: req.deliveryId,
      attemptId: req.attemptId,
      rawPayload: req.rawPayload ?? JSON.stringify(req.payload),
      interactive: req.interactive,
      budgetMs: Math.max(0, left() - 50),
      retryNum: req.retryNum,
    };
    try {
      await post(REQUESTS, to, msg, req.budgetMs);
      const r = await answer;
      if (r?.noSession) return undefined;
      const latencyMs = Math.round((performance.now() - t0) * 10) / 10;
      return r?.result
        ? { ...r.result, latencyMs }
        : { outcome: 'timeout', latencyMs, error: `no answer within ${req.budgetMs} ms` };
    } finally {
      awaiting.delete(rid);
    }
  }

  const beat = clock.setInterval(() => heartbeat().catch(fail), Math.max(50, Math.floor(ttlMs / 3)));

  return {
    relay,
    connections,
    /** Stop relaying; this daemon's holder records go (the apps it held are no longer reachable here). */
    async close(): Promise<void> {
      clock.clear(beat);
      clock.clear(resync);
      unprepare();
      for (const u of unwatch) u();
      for (const u of unsubscribe) u();
      const mine = [...held].map((a): Change => ({ table: SOCKET_HOLDERS_TABLE, id: holderId(a), value: null }));
      held.clear();
      if (mine.length) await store.commit(mine);
    },
  };
}
