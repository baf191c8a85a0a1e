/**
 * The delivery worker's classify stage decides what follows an attempt (src/delivery/worker/classify.ts
 * `decide`): the table of verdicts, as a pure function of the outcome, the schedule and whether the
 * worker stops. test/delivery/* cover the stages end to end; this names each case.
 */
import t from 'tap';
import { decide } from '../../src/delivery/worker/classify.js';
import { createWorkerState, type Finished, type WorkerDeps } from '../../src/delivery/worker/state.js';
import type { PendingDelivery } from '../../src/model/delivery.js';
import type { AppRecord } from '../../src/model/identity.js';
import type { AttemptResult } from '../../src/delivery/types.js';
import { createTestClock } from '../helpers/test-clock.js';

const clock = createTestClock(1_700_000_000_000);
// decide reads the clock and the configuration only
const deps = {
  clock,
  instanceId: 'd1',
  config: { deliveryRetrySchedule: '10,60', deliveryEventTimeoutMs: 5000 },
} as Partial<WorkerDeps> as WorkerDeps;

function verdict(result: AttemptResult, o: { retryNum?: number; final?: boolean; stopped?: boolean } = {}) {
  const w = createWorkerState(deps, () => {});
  w.stopped = o.stopped ?? false;
  const f: Finished = {
    p: { id: 'dlv_1', retryNum: o.retryNum ?? 0 } as PendingDelivery,
    app: {} as AppRecord,
    ours: w.mine,
    attempts: [],
    result,
    final: o.final ?? false,
    verdict: 'failed',
    retryAt: 0,
    next: undefined,
  };
  decide(w, f);
  return f;
}

const acked: AttemptResult = { outcome: 'acked', latencyMs: 1 };
const timeout: AttemptResult = { outcome: 'timeout', latencyMs: 5000 };
const gone: AttemptResult = { outcome: 'http_error', status: 410, latencyMs: 1 };

t.test('delivered: acked or answered, whatever else holds', async (t) => {
  t.equal(verdict(acked).verdict, 'delivered');
  t.equal(verdict({ outcome: 'response', latencyMs: 1 }).verdict, 'delivered');
  t.equal(verdict(acked, { stopped: true }).verdict, 'delivered');
  t.equal(verdict(acked, { final: true }).verdict, 'delivered');
});

t.test('retry: a retryable failure with schedule left, at its jittered delay', async (t) => {
  const f = verdict(timeout);
  t.equal(f.verdict, 'retry');
  t.ok(f.retryAt >= clock.now() + 8000 && f.retryAt <= clock.now() + 12_000, 'the first delay, 10 s ± 20 %');
  const second = verdict(timeout, { retryNum: 1 });
  t.ok(second.retryAt >= clock.now() + 48_000 && second.retryAt <= clock.now() + 72_000, 'the second, 60 s ± 20 %');
});

t.test('failed: refused for good, the schedule ran out, or the queue’s word was final', async (t) => {
  t.equal(verdict(gone).verdict, 'failed', '410 stops for good');
  t.equal(verdict(timeout, { retryNum: 2 }).verdict, 'failed', 'no delay left');
  t.equal(verdict(timeout, { final: true }).verdict, 'failed', 'the socket-mode queue dropped it');
  t.equal(verdict(gone, { stopped: true }).verdict, 'failed', 'stopping changes nothing for a refusal');
});

t.test('released: the worker stops and the failure was retryable', async (t) => {
  t.equal(verdict(timeout, { stopped: true }).verdict, 'released');
  t.equal(verdict(timeout, { stopped: true, retryNum: 2 }).verdict, 'released', 'even out of schedule');
});
