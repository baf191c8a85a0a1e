/** Every command's --help ends with at least one example. */
import t from 'tap';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/main.js';
import { createRun } from '../../src/cli/run.js';
import { captureIo } from '../helpers/cli.js';

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
