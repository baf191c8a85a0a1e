/**
 * What one test knows while it runs: its channel, the results its steps saved, the last call it
 * made to the app, the message it last clicked in, the modals the app has open for it, and the
 * mark after which "the app posted" counts. A failed step throws StepFailed with what was expected
 * and what happened.
 */
import type { Client } from '../client/daemon-client.js';
import type { Api, AppRecord, Delivery, Message, Person } from './api.js';
import type { AppProcess } from './app-process.js';
import type { CallShown, Failure } from './results.js';
import type { Suite, TestSpec } from './suite.js';
import { envScope, resolveDeep, type Scope } from './refs.js';
import { must } from '../must.js';
import { messageOf, recordOr } from '../unknown-values.js';
import type { Resolved } from './steps.js';

/** A suite's run: the app, its users, what every test shares. */
export interface SuiteEnv {
  api: Api;
  suite: Suite;
  app: AppRecord & { url?: string; port?: number; botId?: string };
  proc?: AppProcess;
  /** The suite's users by name (owner included). */
  users: Map<string, Person>;
  run: { dir: string; id: string };
  daemonUrl: string;
  env: Readonly<Record<string, string | undefined>>;
}

/** A suite's run while it is set up: its app not yet registered or found. */
export type Preparing = Omit<SuiteEnv, 'app'> & { app?: SuiteEnv['app'] };

export class StepFailed extends Error {
  constructor(
    message: string,
    public readonly detail: { expected?: string; happened?: string; call?: Delivery } = {},
  ) {
    super(message);
  }
}

/** Where "what the app posted since" starts: the newest message then (as the owner saw it). */
export interface Mark {
  channel: string;
  cursor?: string;
  latest: number;
}

export interface Modal {
  view: Record<string, unknown>;
  channelId: string;
}

export class TestContext {
  readonly saved = new Map<string, unknown>();
  /** The calls this test made to the app (for no-failed-deliveries). */
  readonly calls = new Set<string>();
  /** Messages as they were when an action was about them: "updated" means changed since. */
  readonly snapshots = new Map<string, Message>();
  lastCall?: Delivery;
  lastActionTitle?: string;
  lastActionMadeCall = false;
  /** The last message a user of this test said. */
  lastSaid?: Message;
  /** The message the last click or choice was in. */
  lastSource?: Message;
  readonly modals: Modal[] = [];
  mark?: Mark;
  /** When the last action began (this machine's clock): events after it count. */
  actionAt = Date.now();
  /** When the app answered the last call (0: none yet); the app's printed() when the first action began (crash.ts). */
  calledAt = 0;
  printedAtFirstAction?: number;
  /** The step running now (its index in the test). */
  stepIndex = 0;
  /** The time the running step reports instead of its own, if it sets one (the app's answer time). */
  stepMs?: number;

  constructor(
    public readonly env: SuiteEnv,
    public readonly test: TestSpec,
    public readonly channelId: string,
    public readonly channelName: string,
  ) {}

  scope(): Scope {
    const ofApp = appScope(this.env);
    return (root) => {
      if (root === 'test') return { name: this.test.name, channel: this.channelId };
      return APP_ROOTS.has(root) ? ofApp(root) : this.saved.get(root);
    };
  }

  resolve<T>(v: T): Resolved<T> {
    return resolveDeep(v, this.scope());
  }

  /** The user a step names (owner when it names none). */
  user(name: unknown): Person {
    const u = this.env.users.get(typeof name === 'string' ? name : 'owner');
    if (!u) throw new StepFailed(`no user ${String(name)} in this run`);
    return u;
  }

  clientOf(name: unknown): Promise<Client> {
    return this.env.api.clientOf(this.user(name).id);
  }

  /** The time budget of an expectation. */
  within(step: { within?: number }): number {
    return step.within ?? this.test.within ?? this.env.suite.defaults.within ?? 3000;
  }

  /** An action begins: what the app posts from now on counts for the expectations after it. */
  async beginAction(title: string, channel = this.channelId): Promise<void> {
    const owner = await this.env.api.clientOf(must(this.env.users.get('owner')).id);
    const newest = await this.env.api.newest(owner, channel);
    this.mark = { channel, cursor: newest?.id, latest: newest?.timestampMilli ?? 0 };
    this.actionAt = Date.now();
    this.lastActionTitle = title;
    this.lastActionMadeCall = false;
    this.lastCall = undefined;
    this.printedAtFirstAction ??= this.env.proc?.printed();
  }

  /** A call the last action made: it is the one ack, nack, modal and options are about. */
  called(d: Delivery): void {
    this.lastCall = d;
    this.calledAt = Date.now();
    this.lastActionMadeCall = true;
    this.calls.add(d.id);
    this.followModal(d);
  }

  /** The app answered with a view: the modal stack changes as the platform's client changes it. */
  private followModal(d: Delivery): void {
    const r = recordOr(d.response);
    const payloadChannel = recordOr(d.payload)?.channelId;
    const channelId = typeof payloadChannel === 'string' ? payloadChannel : this.channelId;
    const shown = recordOr(r?.view);
    if (d.outcome === 'response' && shown) {
      // an app's home view updated in answer is no modal
      if (shown.type === 'HOME') return;
      const view = { ...shown };
      if (typeof view.id !== 'string') view.id = `view_${Math.random().toString(36).slice(2, 12)}`;
      const action = String(r?.action ?? 'OPEN').toUpperCase();
      // as the platform's client: OPEN starts a new stack, PUSH adds on top, UPDATE replaces the view with its id
      // (else the top), CLOSE closes the top
      if (action === 'UPDATE' && this.modals.length) {
        const i = this.modals.findIndex((m) => m.view.id === view.id);
        this.modals[i >= 0 ? i : this.modals.length - 1] = { view, channelId };
      } else if (action === 'CLOSE') this.modals.pop();
      else if (action === 'PUSH') this.modals.push({ view, channelId });
      else this.modals.splice(0, this.modals.length, { view, channelId });
    } else if (d.kind === 'view-action' && (d.outcome === 'acked' || d.outcome === 'response')) {
      // an ack of a submit (or a close) closes the modal
      this.modals.pop();
    }
  }

  /** The call as reports show it. */
  static shown(d: Delivery): CallShown {
    const last = d.attempts.at(-1);
    return {
      id: d.id,
      kind: d.kind,
      subject: d.subject,
      target: d.transport === 'socket' ? 'socket mode' : d.url,
      outcome: d.outcome,
      status: last?.status,
      latencyMs: last?.latencyMs,
      shown: d.ephemeralMessage,
      shownFrom: shownFrom(d),
      error: last?.error,
      request: d.payload,
      answer: d.response !== undefined ? d.response : last?.excerpt,
    };
  }

  /** A failure as the report shows it, with the call and the app's last lines. */
  failure(e: unknown): Failure {
    const lines = this.env.proc?.lines().slice(-APP_LINES);
    const appOutput = lines?.length ? lines : undefined;
    if (e instanceof StepFailed) {
      const call = e.detail.call ?? this.lastCall;
      return {
        message: e.message,
        expected: e.detail.expected,
        happened: e.detail.happened,
        ...(call ? { call: TestContext.shown(call) } : {}),
        ...(appOutput ? { appOutput } : {}),
      };
    }
    return { message: messageOf(e), ...(appOutput ? { appOutput } : {}) };
  }
}

/**
 * Whose words the user was shown: the app's own (the message of its ack or nack), or the offline
 * message the platform shows when a call fails (no answer in time, a non-2xx answer, unreachable).
 */
export function shownFrom(d: Delivery): CallShown['shownFrom'] {
  if (d.ephemeralMessage === undefined) return undefined;
  const said = recordOr(d.response)?.message;
  return (d.outcome === 'acked' || d.outcome === 'nacked') && said === d.ephemeralMessage ? 'app' : 'offlineMessage';
}

/** How many of the app's last lines a failure shows. */
const APP_LINES = 15;

/** The roots of a reference that appScope answers; a test adds `test` and the names its steps saved. */
const APP_ROOTS = new Set(['env', 'run', 'daemon', 'app', 'users']);

/** The scope of the app's own fields (start.env, url, id): no test, no saved result. */
export function appScope(env: Preparing): Scope {
  return (root) => {
    switch (root) {
      case 'env':
        return envScope(env.env);
      case 'run':
        return env.run;
      case 'daemon':
        return { url: env.daemonUrl };
      case 'app': {
        // (none yet while the app's own fields are resolved: a reference to it names nothing)
        const app = env.app;
        return app && { id: app.id, name: app.name, url: app.url, port: app.port, botId: app.botId };
      }
      case 'users':
        return Object.fromEntries(env.users);
      default:
        return undefined;
    }
  };
}
