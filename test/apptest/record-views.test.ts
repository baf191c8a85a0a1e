/**
 * Issue 37: what a message's buttons do not cover is recorded as steps that replay. A hand-written suite of the Planner
 * fixture (test/fixtures/views-app: a date and a text in a message, a modal updated, pushed over and submitted with a
 * date, the home view's button and date picker) is run against a daemon while its owner records; the recording's
 * suite has those steps (`date`, `enter`, `modal: true`, `home: true`, each modal's title and inputs), and
 * `appreg test` on it passes.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { runMain } from '../helpers/cli.js';
import { startTestDaemon } from '../helpers/daemon.js';
import { CONDITION_MS, until } from '../helpers/until.js';
import { IN_THE_MODAL, PLANNER_APP, plannerDir } from '../helpers/planner.js';

t.test('dates, texts, modals and the home view, recorded and replayed', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const played = {
    app: PLANNER_APP,
    defaults: { within: CONDITION_MS },
    tests: [
      {
        name: 'plan',
        steps: [
          { say: '/plan' },
          { expect: 'message', text: 'plan: nothing yet' },
          { date: '2026-12-01', in: 'due' },
          { expect: 'updated', text: 'plan: due 2026-12-01' },
          { enter: 'buy milk', in: 'note' },
          { expect: 'updated', text: 'plan: note buy milk' },
          { click: 'Details' },
          { expect: 'modal', title: 'Plan details' },
          ...IN_THE_MODAL,
          { expect: 'message', text: 'planned Q4 due 2026-12-05' },
          { click: { onAction: 'home_refresh' }, home: true },
          { expect: 'answered' },
          { date: '2026-12-24', in: 'home_day', home: true },
          { expect: 'answered' },
        ],
      },
    ],
  };
  const dir = plannerDir(played, 'played.apptest.json');

  const started = await d.api(`${d.mgmt}/recordings`, { method: 'POST' });
  t.equal(started.status, 201);
  const { recording } = (await started.json()) as { recording: { id: string } };
  const play = await runMain(['--url', d.url, '--token', d.token, 'test', path.join(dir, 'played.apptest.json')]);
  t.equal(play.code, 0, `played:\n${play.stdout}\n${play.stderr}`);
  const info = async () =>
    ((await (await d.api(`${d.mgmt}/recordings/${recording.id}`)).json()) as { recording: { events: number } })
      .recording;
  await until(info, (r) => r.events >= 10);
  t.equal((await d.api(`${d.mgmt}/recordings/${recording.id}/stop`, { method: 'POST' })).status, 200);
  const made = (await (await d.api(`${d.mgmt}/recordings/${recording.id}/suite`)).json()) as {
    suite: { tests: Array<{ steps: Array<Record<string, unknown>> }> };
    notes: string[];
  };
  const steps = made.suite.tests[0]?.steps ?? [];
  t.same(made.notes, [], 'nothing left out');
  t.match(steps, [
    { say: '/plan' },
    { expect: 'ack' },
    { expect: 'message', text: 'plan: nothing yet', save: 'plan' },
    { date: '2026-12-01', in: 'due', message: '${plan}' },
    { expect: 'ack' },
    { expect: 'updated', text: 'plan: due' },
    { enter: 'buy milk', in: 'note', message: '${plan}' },
    { expect: 'ack' },
    { expect: 'updated', text: 'plan: note buy milk' },
    { click: 'Details', message: '${plan}' },
    { expect: 'modal', title: 'Plan details', inputs: ['Title', 'Due'] },
    ...IN_THE_MODAL,
    { expect: 'message', text: 'planned Q4 due' },
    { click: { onAction: 'home_refresh' }, home: true },
    { expect: 'answered' },
    { date: '2026-12-24', in: 'home_day', home: true },
    { expect: 'answered' },
  ]);

  // the run that played the suite deleted its messages when it ended, and the recording saw that too: not the
  // conversation's
  const after = steps.slice(24);
  t.ok(
    after.every((s) => s.expect === 'deleted'),
    'after the conversation: the played run cleaning up',
  );
  const tests = [{ ...made.suite.tests[0], steps: steps.slice(0, 24) }, ...made.suite.tests.slice(1)];
  const file = path.join(dir, 'recorded.apptest.json');
  fs.writeFileSync(
    file,
    JSON.stringify({ ...made.suite, tests, app: PLANNER_APP, defaults: { within: CONDITION_MS } }),
  );
  const replay = await runMain(['test', file]);
  t.equal(replay.code, 0, `the recorded suite passes:\n${replay.stdout}\n${replay.stderr}`);
});
