/**
 * Issue 37: the steps a message's buttons do not cover, against an app that has them (test/fixtures/views-app): a date
 * picked and a text entered in a message, a modal opened from a click and then updated (UPDATE), pushed over (PUSH) and
 * submitted with a date in it, and the home view's button and date picker. Then the same steps where the app has
 * nothing of the kind, each failing with what happened, so that none passes by doing nothing.
 */
import t from 'tap';
import { runMain } from '../helpers/cli.js';
import { IN_THE_MODAL, PLANNER_APP, plannerDir } from '../helpers/planner.js';
import { CONDITION_MS } from '../helpers/until.js';
import type { RunResult } from '../../src/apptest/results.js';
import { must } from '../../src/must.js';

const test = (name: string, steps: unknown[]) => ({ name, steps });
const suite = (tests: unknown[], more: Record<string, unknown> = {}) => ({
  ...more,
  app: PLANNER_APP,
  defaults: { within: CONDITION_MS },
  tests,
});

t.test('dates, texts, modals updated and pushed, the home view: every step meets the app', async (t) => {
  const r = await runMain([
    'test',
    plannerDir(
      suite(
        [
          test('a date and a text in a message', [
            { say: '/plan', save: 'plan' },
            { expect: 'message', text: 'plan: nothing yet', save: 'planned' },
            { date: '2026-12-01', in: 'due', message: '${planned}' },
            { expect: 'ack' },
            { expect: 'updated', text: 'plan: due 2026-12-01' },
            { enter: 'buy milk', in: 'Note' },
            { expect: 'updated', text: 'plan: note buy milk' },
          ]),
          test('a modal updated, pushed over, and submitted with a date', [
            { say: '/plan' },
            { expect: 'message', text: 'plan: nothing yet' },
            { click: 'Details' },
            { expect: 'modal', title: 'Plan details', inputs: ['Title', 'Due'] },
            ...IN_THE_MODAL,
            { expect: 'message', text: 'planned Q4 due 2026-12-05' },
          ]),
          test('in another channel, declared by the suite', [
            { say: '/plan', channel: 'planning' },
            { expect: 'message', text: 'plan: nothing yet', save: 'elsewhere' },
            { date: '2026-12-02', in: 'due', message: '${elsewhere}' },
            { expect: 'updated', text: 'plan: due 2026-12-02' },
            { say: '/plan' },
            { expect: 'message', text: 'plan: nothing yet', channel: '${test.channel}' },
          ]),
          test('the home view', [
            { click: { onAction: 'home_refresh' }, home: true },
            { expect: 'answered' },
            { date: '2026-12-24', in: 'home_day', home: true },
            { expect: 'answered' },
          ]),
        ],
        { channels: ['planning'] },
      ),
    ),
    '--reporter',
    'json',
  ]);
  const result = JSON.parse(r.stdout) as RunResult;
  const failed = must(result.suites[0]).tests.filter((x) => x.status !== 'passed');
  t.equal(r.code, 0, failed.length ? JSON.stringify(failed, null, 2) : 'exit 0');
  t.equal(result.counts.passed, 4);
});

t.test('the same steps where the app has nothing of the kind fail, saying what happened', async (t) => {
  const r = await runMain([
    'test',
    plannerDir(
      suite(
        [
          test('no such date picker', [
            { say: '/plan' },
            { expect: 'message', text: 'plan' },
            { date: '2026-12-01', in: 'deadline' },
          ]),
          test('a range where there is a single date', [
            { say: '/plan' },
            { expect: 'message', text: 'plan' },
            { date: ['2026-12-01', '2026-12-03'] },
          ]),
          test('the date the app did not write', [
            { say: '/plan' },
            { expect: 'message', text: 'plan' },
            { date: '2026-12-01' },
            { expect: 'updated', text: 'due 2027-01-01', within: 800 },
          ]),
          test('a modal closed by a submit', [
            { say: '/plan' },
            { expect: 'message', text: 'plan' },
            { click: 'Details' },
            { submit: { Title: 'Q4', Due: '2026-12-05' } },
            { submit: { Title: 'again' } },
          ]),
          test('a pushed modal is on top', [
            { say: '/plan' },
            { expect: 'message', text: 'plan' },
            { click: 'Details' },
            { click: 'More', modal: true },
            { submit: { Title: 'Q4' } },
          ]),
          test('the home view updated is no modal', [
            { click: { onAction: 'home_refresh' }, home: true },
            { expect: 'answered' },
            { close: true },
          ]),
          test('the home view of a user the app never saw', [
            { click: { onAction: 'home_refresh' }, home: true, as: 'ana' },
          ]),
        ],
        { users: { ana: {} } },
      ),
    ),
    '--reporter',
    'json',
  ]);
  const tests = new Map(must((JSON.parse(r.stdout) as RunResult).suites[0]).tests.map((x) => [x.name, x]));
  const failure = (name: string) => {
    const x = must(tests.get(name), name);
    t.equal(x.status, 'failed', `${name}: failed`);
    return x.steps.find((s) => s.status === 'failed')?.failure;
  };
  t.match(failure('no such date picker'), { message: /no message of the test's channel has a date picker "deadline"/ });
  t.match(failure('a range where there is a single date'), { message: /has a date range picker/ });
  t.match(failure('the date the app did not write'), { happened: /it reads "plan: due 2026-12-01"/ });
  t.match(failure('a modal closed by a submit'), { message: /no modal is open/ });
  t.match(failure('a pushed modal is on top'), { message: /the modal has no input "Title" \(it has "Owner note"\)/ });
  t.match(failure('the home view updated is no modal'), { message: /no modal is open/ });
  t.match(failure('the home view of a user the app never saw'), {
    message: 'the app has published no home view for ana: there is nothing to use in it',
  });
});
