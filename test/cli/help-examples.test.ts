/** Every command's --help ends with at least one example. */
import t from 'tap';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/main.js';
import { createRun } from '../../src/cli/run.js';
import { captureIo } from '../helpers/cli.js';
import { must } from '../../src/must.js';

function leaves(cmd: Command, prefix: string[] = []): Array<{ name: string; cmd: Command }> {
  const subs = cmd.commands as Command[];
  if (!subs.length) return [{ name: prefix.join(' '), cmd }];
  return subs.flatMap((c) => leaves(c, [...prefix, c.name()]));
}

t.test('every leaf command shows an example in its help', async (t) => {
  const { io, out } = captureIo();
  const all = leaves(buildProgram(createRun(io)));
  t.ok(all.length >= 20, `found ${all.length} commands`);
  for (const { name, cmd } of all) {
    out.stdout = '';
    cmd.outputHelp();
    t.match(out.stdout, /Examples?:\n\s+\$ appreg /, `${name} --help has an example`);
  }
});

/**
 * Issue 22 §4: `appreg --help` lists the commands by task, the getting-started ones first, and every command in a
 * group.
 */
t.test('appreg --help groups the commands by task; apps --help starts with init and validate', async (t) => {
  const { io, out } = captureIo();
  const program = buildProgram(createRun(io));
  program.outputHelp();
  const headings = out.stdout.split('\n').filter((l) => /^[A-Z][\w ]*:$/.test(l));
  t.same(headings, [
    'Options:',
    'Getting started:',
    'The workspace:',
    'Accounts:',
    'Operations:',
    'Commands:',
    'Examples:',
  ]);
  const section = (h: string) =>
    must(must(out.stdout.split(`\n${h}\n`)[1]).split('\n\n')[0])
      .split('\n')
      .filter((l) => /^ {2}\S/.test(l))
      .map((l) => l.trim().split(' ')[0]);
  t.same(section('Getting started:'), ['serve', 'open', 'apps', 'authorize', 'deliver-test', 'test']);
  t.same(section('The workspace:'), ['say', 'messages', 'channels', 'groups', 'react']);
  t.same(section('Operations:'), ['deliveries', 'db']);
  t.same(section('Commands:'), ['help'], 'no command left outside the groups but help itself');
  out.stdout = '';
  must((program.commands as Command[]).find((c) => c.name() === 'apps')).outputHelp();
  t.same(section('Commands:').slice(0, 3), ['init', 'validate', 'create']);
});
