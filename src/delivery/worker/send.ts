/**
 * Stage 3, send: the attempt through the dispatcher, which picks the transport (HTTP, or the app's
 * socket-mode connection), signs, sends within the attempt's budget and says how it went.
 */
import type { Attempted } from '../dispatcher.js';
import type { Attempt, WorkerState } from './state.js';

export function send(w: WorkerState, a: Attempt): Promise<Attempted> {
  return w.deps.dispatcher.attempt(a.out, a.app, { interactive: false, budgetMs: a.timeoutMs, retryNum: a.retryNum });
}
