/** Every command's --help ends with at least one example (the brief: "--help with examples"). */
import t from 'tap';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/main.js';

function leaves(cmd: Command, prefix: string[] = []): Array<{ name: string; cmd: Command }> {
  const subs = cmd.commands as Command[];
  if (!subs.length) return [{ name: prefix.join(' '), cmd }];
  return subs.flatMap((c) => leaves(c, [...prefix, c.name()]));
}

t.test('every leaf command shows an example in its help', async (t) => {
  const all = leaves(buildProgram());
  t.ok(all.length >= 20, `found ${all.length} commands`);
  for (const { name, cmd } of all) {
    let text = '';
    cmd.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
    cmd.outputHelp();
    t.match(text, /Examples?:\n\s+\$ appreg /, `${name} --help has an example`);
  }
});
