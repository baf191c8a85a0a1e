/**
 * Every action and expectation against an app that does what the example does not
 * (test/fixtures/apptest-app: a nack, an ephemeral message, a static select and checkboxes, a
 * deleted message, a reaction, a message shortcut, a modal with a select, a button and
 * notifyOnClose, an event answered with a post), from a JSON suite with a readiness URL; then the
 * same app against expectations it does not meet, each failing with what was expected and what
 * happened, so that none of them passes by looking at nothing.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, runMain } from '../helpers/cli.js';
import { tempDir } from '../helpers/daemon.js';
import { CONDITION_MS } from '../helpers/until.js';
import type { RunResult } from '../../src/apptest/results.js';
import { must } from '../../src/must.js';

const FIXTURE = path.join(ROOT, 'test/fixtures/apptest-app');
/** How long a step waits for what never comes. */
const ABSENT_MS = 800;
/** How long a step waits for what never comes when its failure names what came meanwhile (a message, a reaction). */
const PRESENT_MS = 10_000;

/** The fixture app in a folder of its own, with `suite` written as its suite (none: the fixture's). */
function appDir(suite?: unknown): string {
  const dir = tempDir('appreg-kit-');
  for (const f of ['app.mjs', 'manifest.json']) fs.copyFileSync(path.join(FIXTURE, f), path.join(dir, f));
  if (suite) fs.writeFileSync(path.join(dir, 'wrong.apptest.json'), JSON.stringify(suite));
  else fs.copyFileSync(path.join(FIXTURE, 'kit.apptest.json'), path.join(dir, 'kit.apptest.json'));
  return dir;
}

t.test('every action and expectation, against an app that meets them', async (t) => {
  const r = await runMain(['test', appDir(), '--reporter', 'json', '--jobs', '3']);
  const result = JSON.parse(r.stdout) as RunResult;
  const failed = must(result.suites[0]).tests.filter((x) => x.status !== 'passed');
  t.equal(r.code, 0, failed.length ? JSON.stringify(failed, null, 2) : 'exit 0');
  t.equal(result.counts.passed, 5);
  t.match(must(result.suites[0]).app, { ready: /ms$/ }, 'ready once its /health answered 204');
});

t.test('expectations the app does not meet fail, each saying what happened', async (t) => {
  const test = (name: string, steps: unknown[]) => ({ name, steps });
  const suite = {
    app: { manifest: 'manifest.json', start: { command: 'node app.mjs' } },
    users: { ana: {} },
    // what the app does answer is judged on what it answered, however late a busy machine makes it; the steps whose
    // failure is an absence wait ABSENT_MS, or PRESENT_MS where the failure also shows what did come
    defaults: { within: CONDITION_MS },
    tests: [
      test('nack text', [{ say: '/kit nack' }, { expect: 'nack', text: 'Sorry' }]),
      test('ack of a nack', [{ say: '/kit nack' }, { expect: 'ack' }]),
      test('ephemeral to another', [
        { say: '/kit secret', as: 'ana' },
        { expect: 'message', ephemeralTo: 'owner', text: 'psst', within: ABSENT_MS },
      ]),
      test('a message it posts', [{ say: '/kit secret' }, { expect: 'no-message', ephemeralTo: 'owner' }]),
      test('buttons it lacks', [{ say: '/kit' }, { expect: 'message', buttons: ['Join'], within: PRESENT_MS }]),
      test('an option it lacks', [
        { say: '/kit' },
        { expect: 'message', text: 'pick' },
        { select: 'Blue', in: 'color' },
      ]),
      test('a reaction it does not add', [
        { say: 'hi', save: 'hi' },
        { shortcut: 'look', message: '${hi}' },
        { expect: 'reaction', code: 'thumbsup', within: PRESENT_MS },
      ]),
      test('a deletion that does not come', [
        { say: '/kit' },
        { expect: 'message', text: 'pick' },
        { select: 'Red', in: 'Color' },
        { expect: 'deleted', within: ABSENT_MS },
      ]),
      test('a modal input it lacks', [{ shortcut: 'open_form' }, { expect: 'modal', inputs: ['Email'] }]),
      test('a submit of an input it lacks', [{ shortcut: 'open_form' }, { submit: { Email: 'x' } }]),
      test('a modal from a command', [{ say: '/kit nack' }, { expect: 'modal' }]),
      test('an event that does not come', [
        { say: 'nothing to react to' },
        { expect: 'event', type: 'REACTION_ADDED', within: ABSENT_MS },
      ]),
      test('an answer after a plain message', [{ say: 'hello' }, { expect: 'answered' }]),
    ],
  };
  const r = await runMain(['test', appDir(suite), '--reporter', 'json', '--jobs', '4']);
  t.equal(r.code, 6);
  const tests = new Map(must((JSON.parse(r.stdout) as RunResult).suites[0]).tests.map((x) => [x.name, x]));
  const failure = (name: string) => {
    const x = must(tests.get(name));
    t.equal(x.status, 'failed', `${name}: failed`);
    return x.steps.find((s) => s.status === 'failed')?.failure;
  };
  t.match(failure('nack text'), {
    message: 'the app nacked without the message expected',
    expected: 'the user is shown "Sorry"',
    happened: 'the user is shown "No can do"',
  });
  t.match(failure('ack of a nack'), {
    message: 'the app did not ack',
    happened: /it nacked \(answered 400 with a message\) after [\d.]+ ms, showing "No can do"/,
    call: { kind: 'slash-command', status: 400 },
  });
  t.match(failure('ephemeral to another'), { message: /posted no such message/, happened: /nothing was posted/ });
  t.match(failure('a message it posts'), {
    message: 'the app posted a message it should not have',
    happened: /"psst, only you" \(ephemeral\)/,
  });
  t.match(failure('buttons it lacks'), { expected: /with buttons "Join"/, happened: /"pick things" \[Delete me\]/ });
  t.match(failure('an option it lacks'), {
    message: 'the select color has no option "Blue"',
    happened: 'it offers "Red", "Green"',
  });
  t.match(failure('a reaction it does not add'), {
    message: /no reaction :thumbsup: from the app/,
    happened: /its reactions: :eyes: by bot_/,
  });
  t.match(failure('a deletion that does not come'), {
    message: /did not delete the message/,
    happened: 'it is still there',
  });
  t.match(failure('a modal input it lacks'), {
    happened: /it has no input "Email" \(its inputs: "Your name", "Size"\)/,
  });
  t.match(failure('a submit of an input it lacks'), { message: /the modal has no input "Email"/ });
  t.match(failure('a modal from a command'), { message: 'the app did not open a modal', expected: /a view/ });
  t.match(failure('an event that does not come'), { message: /no REACTION_ADDED event reached the app within 800 ms/ });
  t.match(failure('an answer after a plain message'), {
    message: /the last action \(say hello\) made no call to the app/,
  });
});
