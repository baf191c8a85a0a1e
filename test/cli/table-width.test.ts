/**
 * CLI tables line up by terminal columns, not by UTF-16 code units: a wide (CJK) character and an
 * emoji (a ZWJ sequence, a flag) take two columns, ANSI colour codes none. Each cell's width on a
 * terminal is written out here by hand, so the check does not measure with the library it checks.
 */
import t from 'tap';
import { Chalk } from 'chalk';
import { loadDisplayWidth, padDisplay, table } from '../../src/cli/output.js';
import { must } from '../../src/must.js';

const ANSI = new RegExp(String.raw`\u001b\[[0-9;]*m`, 'g');

/** A cell's text and the columns it takes on a terminal. */
type Cell = [text: string, columns: number];

const headers: Cell[] = [
  ['NAME', 4],
  ['ID', 2],
  ['STATE', 5],
];
const rows: Cell[][] = [
  [
    ['plain', 5],
    ['app_1', 5],
    ['ok', 2],
  ],
  [
    ['名前のアプリ', 12],
    ['app_2', 5],
    ['停止', 4],
  ],
  [
    ['👩‍💻 dev', 6], // woman technologist: a ZWJ sequence of three code points
    ['🇯🇵', 2], // a flag: two regional indicators
    ['👨‍👩‍👧‍👦', 2], // family: four people joined by three ZWJ
  ],
  [
    ['cafe\u0301 ✅', 7], // e + combining acute; a wide emoji
    ['한국어', 6],
    ['ok', 2],
  ],
];

/** The terminal column each cell of `line` starts at, from the cells' known widths. */
function columnStarts(line: string, cells: Cell[]): number[] {
  const plain = line.replace(ANSI, '');
  const starts: number[] = [];
  let at = 0; // index in `plain`
  let column = 0; // terminal column of `at`
  for (const [text, columns] of cells) {
    const found = plain.indexOf(text, at);
    if (found < 0) throw new Error(`"${text}" not found in ${JSON.stringify(plain)}`);
    const gap = plain.slice(at, found);
    if (!/^ *$/.test(gap)) throw new Error(`non-space between cells: ${JSON.stringify(gap)}`);
    column += gap.length;
    starts.push(column);
    at = found + text.length;
    column += columns;
  }
  return starts;
}

t.test('table columns start at the same terminal column on every row', async (t) => {
  await loadDisplayWidth();
  for (const level of [0, 1] as const) {
    const c = new Chalk({ level });
    // colour some cells: the codes take no columns
    const coloured = rows.map((r) => r.map(([text], i) => (i === 2 ? c.red(text) : i === 0 ? c.bold(text) : text)));
    const lines = table(
      c,
      headers.map(([h]) => h),
      coloured,
    ).split('\n');
    t.equal(lines.length, rows.length + 1);
    if (level) t.match(lines[2] ?? '', ANSI, 'colour codes are in the output');
    const starts = [headers, ...rows].map((cells, i) => columnStarts(must(lines[i]), cells));
    for (const s of starts) t.same(s, starts[0], `colour level ${level}: ${JSON.stringify(s)}`);
    // the widest first cell is 12 columns, then two spaces
    t.same(starts[0], [0, 14, 22], `colour level ${level}: columns as wide as their widest cell`);
  }
});

t.test('padDisplay pads to terminal columns', async (t) => {
  await loadDisplayWidth();
  t.equal(padDisplay('名前', 6), '名前  ');
  t.equal(padDisplay('🇯🇵', 3), '🇯🇵 ');
  t.equal(padDisplay(new Chalk({ level: 1 }).red('ab'), 4).replace(ANSI, ''), 'ab  ');
  t.equal(padDisplay('wider than that', 3), 'wider than that', 'never cut');
});
