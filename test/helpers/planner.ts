/**
 * The Planner fixture (test/fixtures/views-app: dates and texts in a message, modals updated and pushed, a home view)
 * as the tests of those steps use it: the app in a folder of its own with a suite beside it, and the modal
 * conversation that the runner plays, the recorder writes back and the replay plays again, step for step.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './cli.js';
import { tempDir } from './daemon.js';

/** How a suite starts the Planner. */
export const PLANNER_APP = {
  manifest: 'manifest.json',
  start: { command: 'node app.mjs', ready: { output: 'listening on' } },
};

/** The Planner in a folder of its own with `suite` beside it as `file`: the folder. */
export function plannerDir(suite: unknown, file = 'planner.apptest.json'): string {
  const dir = tempDir('appreg-planner-');
  const fixture = path.join(ROOT, 'test/fixtures/views-app');
  for (const f of ['app.mjs', 'manifest.json']) fs.copyFileSync(path.join(fixture, f), path.join(dir, f));
  fs.writeFileSync(path.join(dir, file), JSON.stringify(suite));
  return dir;
}

/**
 * In the details modal (open): Rename updates it (UPDATE), More pushes another over it (PUSH), that one is submitted
 * and the details below it then; each modal's title and inputs as the app answered them.
 */
export const IN_THE_MODAL = [
  { click: 'Rename', modal: true },
  { expect: 'modal', title: 'Plan details, renamed', inputs: ['Title', 'Due'] },
  { click: 'More', modal: true },
  { expect: 'modal', title: 'More', inputs: ['Owner note'] },
  { submit: { 'Owner note': 'later' } },
  { expect: 'ack' },
  { submit: { Title: 'Q4', Due: '2026-12-05' } },
  { expect: 'ack' },
];
