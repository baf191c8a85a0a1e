/**
 * The shell commands of a markdown document, in order, as test/readme runs them: every ```sh
 * and ```console block, except one marked `<!-- illustration -->` on the line before it.
 * In a ```sh block each line is a command (bash ignores its `# comment`); in a ```console block
 * a line starting with `$ ` is a command and the lines after it, up to the next one, are what it
 * prints, `…` standing for anything.
 */
import { must } from '../../src/must.js';

export interface Step {
  /** The command as the document writes it. */
  command: string;
  /** The output shown under it (console blocks), line by line; empty when none is shown. */
  shows: string[];
  /** The heading of the section it is in. */
  section: string;
  /** Its block, counted from 1 in the document: a block's background processes end with it. */
  block: number;
  /** Its line in the document, for messages. */
  line: number;
}

export function docSteps(markdown: string, o: { from?: string; until?: string } = {}): Step[] {
  const lines = markdown.split('\n');
  const steps: Step[] = [];
  let section = '';
  let block = 0;
  let on = o.from === undefined;
  for (let i = 0; i < lines.length; i++) {
    const heading = /^#{1,4} (.*)$/.exec(must(lines[i]));
    if (heading) {
      section = must(heading[1]);
      if (o.from !== undefined && section.startsWith(o.from)) on = true;
      else if (o.until !== undefined && section.startsWith(o.until)) on = false;
      continue;
    }
    const fence = /^```(sh|console)\s*$/.exec(must(lines[i]));
    if (!fence) continue;
    const illustration =
      /<!--\s*illustration\b/.test(lines[i - 1] ?? '') || /<!--\s*illustration\b/.test(lines[i - 2] ?? '');
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(must(lines[i])); i++) body.push(must(lines[i]));
    if (!on || illustration) continue;
    block++;
    if (fence[1] === 'sh') {
      body.forEach((l, k) => {
        if (l.trim() && !l.trim().startsWith('#'))
          steps.push({ command: l.trim(), shows: [], section, block, line: start + 2 + k });
      });
    } else {
      body.forEach((l, k) => {
        if (l.startsWith('$ '))
          steps.push({ command: l.slice(2).trim(), shows: [], section, block, line: start + 2 + k });
        else if (steps.length && must(steps.at(-1)).block === block) must(steps.at(-1)).shows.push(l);
      });
    }
  }
  return steps;
}

/** The command without its trailing `# comment` (a `#` after a space, outside quotes). */
export function withoutComment(command: string): string {
  let quote: string | undefined;
  for (let i = 0; i < command.length; i++) {
    const ch = must(command[i]);
    if (quote) {
      if (ch === quote) quote = undefined;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '#' && /\s/.test(command[i - 1] ?? '')) return command.slice(0, i).trimEnd();
  }
  return command.trimEnd();
}

/**
 * Whether `output` has the shape `shows`: each shown line, in order, matches a line of the
 * output (`…` matches anything, runs of spaces any spacing); the lines the document leaves out
 * may be anywhere. Returns the first shown line that no line matched, or undefined.
 */
export function missingShape(shows: string[], output: string): string | undefined {
  const got = output.split('\n').map((l) => l.trimEnd());
  let at = 0;
  for (const want of shows) {
    const re = new RegExp(
      `^${want
        .trimEnd()
        .split('…')
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ +/g, '\\s+'))
        .join('.*')}$`,
    );
    while (at < got.length && !re.test(must(got[at]))) at++;
    if (at >= got.length) return want;
    at++;
  }
  return undefined;
}
