/** Every command's --help ends with at least one example. */
import t from 'tap';
import type { Command } from 'commander';
import { Readable } from 'node:stream';
import { buildProgram } from '../../src/cli/main.js';
import { createRun } from '../../src/cli/run.js';

function leaves(cmd: Command, prefix: string[] = []): Array<{ name: string; cmd: Command }> {
  const subs = cmd.commands as Command[];
  if (!subs.length) return [{ name: prefix.join(' '), cmd }];
  return subs.flatMap((c) => leaves(c, [...prefix, c.name()]));
}

t.test('every leaf command shows an example in its help', async (t) => {
  let text = '';
  const write = (s: string) => (text += s);
  const run = createRun({ stdout: { write }, stderr: { write }, env: {}, cwd: process.cwd(), isTTY: false, stdin: Readable.from([]), stopSignal: () => new Promise(() => {}) });
  const all = leaves(buildProgram(run));
  t.ok(all.length >= 20, `found ${all.length} commands`);
  for (const { name, cmd } of all) {
    text = '';
    cmd.outputHelp();
    t.match(text, /Examples?:\n\s+\$ appreg /, `${name} --help has an example`);
  }
});
