/**
 * A suite file is untrusted input (docs/testing.md, "Suite files are untrusted input"): it is read
 * only up to a size limit, checked before anything is parsed; its YAML is parsed with a bound on
 * how deeply it nests (checked on the parser's token tree, before the recursive composer runs) and
 * on how far its aliases expand; the files it names resolve inside its folder, symbolic links
 * followed; and no error quotes what a file holds (a parser's message can carry the bytes it
 * stopped at: a suite pointed at /etc/shadow must not print its first line in a CI log).
 */
import fs from 'node:fs';
import path from 'node:path';
import { LineCounter, Parser, parseDocument, type CST, type Document } from 'yaml';
import { tooDeep } from '../json-depth.js';
import { unreadable } from '../file-errors.js';
import { messageOf } from '../unknown-values.js';

/** What a suite file (and the manifest it names) may be: `--max-suite-bytes` changes the size. */
export const SUITE_LIMITS = {
  /** 1 MiB: a suite of thousands of tests is a few hundred KB. */
  maxBytes: 1024 * 1024,
  /** Objects and lists inside each other; a suite's deepest part (a step's event body) is far below it. */
  maxDepth: 64,
  /** How many nodes the YAML aliases (`*name`) of one file may expand to, all together. */
  maxAliasCount: 1000,
} as const;

/** What a read is allowed: the size limit, and whether named files may be outside the suite's folder. */
export interface InputOptions {
  maxBytes?: number;
  allowOutside?: boolean;
}

/** A refusal of the input, said once for the file (exit 7). */
export class InputRefused extends Error {
  constructor(
    message: string,
    /** `file:line:column` where it is known, else `file:`. */
    public readonly at: string,
  ) {
    super(message);
  }
}

/** A file that cannot be read at all: its errno code only. */
export class InputUnreadable extends Error {}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * The text of `file`, read through one descriptor: refused when it holds more than `maxBytes`
 * (its size checked first, and no more than one byte beyond the limit ever read, so a special
 * file or one that grows is refused too).
 */
export function readBounded(file: string, maxBytes: number, what: string): string {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (e) {
    throw new InputUnreadable(unreadable(e));
  }
  try {
    const st = fs.fstatSync(fd);
    if (st.isDirectory()) throw new InputUnreadable(unreadable({ code: 'EISDIR' }));
    const tooBig = () =>
      new InputRefused(
        `${what} ${st.size > maxBytes ? `is ${count(st.size)} bytes,` : 'holds'} more than the ${count(maxBytes)} bytes allowed (--max-suite-bytes changes the limit)`,
        `${file}:`,
      );
    if (st.size > maxBytes) throw tooBig();
    // room for what the size says and one byte more, grown (up to the limit and a byte) if more comes
    let buf = Buffer.alloc(st.size + 1);
    let got = 0;
    for (;;) {
      if (got === buf.length) {
        if (got > maxBytes) throw tooBig();
        const more = Buffer.alloc(Math.min(maxBytes + 1, buf.length * 2));
        buf.copy(more);
        buf = more;
      }
      const n = fs.readSync(fd, buf, got, buf.length - got, null);
      if (n === 0) break;
      got += n;
    }
    return buf.toString('utf8', 0, got);
  } catch (e) {
    if (e instanceof InputRefused || e instanceof InputUnreadable) throw e;
    throw new InputUnreadable(unreadable(e));
  } finally {
    fs.closeSync(fd);
  }
}

/** Line and column (1-based) of a character offset. */
function position(text: string, offset: number): { line: number; col: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, col: offset - lineStart + 1 };
}

/**
 * JSON.parse, its failure said by where it is only: V8's own message quotes the text it stopped at.
 * `what` names the input (`the manifest m.json`; '' for the file the refusal is listed under).
 */
export function parseJson(file: string, text: string, what: string, maxDepth: number): unknown {
  const subject = what ? `${what} ` : '';
  if (tooDeep(text, maxDepth))
    throw new InputRefused(`${subject}nests objects and lists deeper than the ${maxDepth} levels allowed`, `${file}:`);
  try {
    return JSON.parse(text);
  } catch (e) {
    const message = messageOf(e);
    const at = /at position (\d+)/.exec(message);
    if (at) {
      const pos = position(text, Number(at[1]));
      throw new InputRefused(`${subject}is not valid JSON`, `${file}:${pos.line}:${pos.col}`);
    }
    throw new InputRefused(
      `${subject}is not valid JSON${/end of JSON input/.test(message) ? ' (it ends too soon)' : ''}`,
      `${file}:`,
    );
  }
}

/** The deepest nesting of collections in a YAML token tree, walked without recursion. */
function cstDepth(tokens: CST.Token[], limit: number): number {
  let deepest = 0;
  const todo: Array<[CST.Token | undefined, number]> = tokens.map((t) => [t, 0]);
  for (let next = todo.pop(); next; next = todo.pop()) {
    const [tok, depth] = next;
    if (!tok) continue;
    if (tok.type === 'document') todo.push([tok.value, depth]);
    else if (tok.type === 'block-map' || tok.type === 'block-seq' || tok.type === 'flow-collection') {
      const d = depth + 1;
      if (d > deepest) deepest = d;
      if (deepest > limit) return deepest;
      for (const item of tok.items) {
        if ('key' in item) todo.push([item.key ?? undefined, d]);
        todo.push([item.value, d]);
      }
    }
  }
  return deepest;
}

/** What each YAML error code means, written here: the parser's own messages can quote the file. */
const YAML_PROBLEMS: Record<string, string> = {
  ALIAS_PROPS: 'an alias cannot have an anchor or a tag',
  BAD_ALIAS: 'an alias names no anchor set before it',
  BAD_COLLECTION_TYPE: 'a tag is used on the wrong kind of value',
  BAD_DIRECTIVE: 'a directive is not valid',
  BAD_DQ_ESCAPE: 'a double-quoted string has an invalid escape',
  BAD_INDENT: 'the indentation is wrong',
  BAD_PROP_ORDER: 'anchors and tags must come after the indicator',
  BAD_SCALAR_START: 'a plain value starts with a character it cannot start with (quote it)',
  BLOCK_AS_IMPLICIT_KEY: 'a block value is used as a key',
  BLOCK_IN_FLOW: 'a block value is inside [ ] or { }',
  DUPLICATE_KEY: 'a key is given twice in one mapping',
  KEY_OVER_1024_CHARS: 'a key is longer than 1024 characters',
  MISSING_CHAR: 'a character is missing (a comma, a colon, a space or a closing bracket)',
  MULTILINE_IMPLICIT_KEY: 'a key runs over several lines',
  MULTIPLE_ANCHORS: 'a value has two anchors',
  MULTIPLE_DOCS: 'the file holds several documents (one suite per file)',
  MULTIPLE_TAGS: 'a value has two tags',
  NON_STRING_KEY: 'a key is not a string',
  TAB_AS_INDENT: 'a tab is used to indent',
  TAG_RESOLVE_FAILED: 'a tag is not known',
  UNEXPECTED_TOKEN: 'something is where it cannot be',
};

/** A YAML document whose nesting is within `maxDepth`, else refusals (each with its place); never the text itself. */
export function parseYaml(
  file: string,
  text: string,
  maxDepth: number,
  options: { uniqueKeys?: boolean } = {},
): { doc: Document; lineCounter: LineCounter } | { refused: InputRefused[] } {
  const tokens = Array.from(new Parser().parse(text));
  const depth = cstDepth(tokens, maxDepth);
  if (depth > maxDepth)
    return {
      refused: [new InputRefused(`nests mappings and lists deeper than the ${maxDepth} levels allowed`, `${file}:`)],
    };
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: options.uniqueKeys ?? true });
  if (!doc.errors.length) return { doc, lineCounter };
  return {
    refused: doc.errors.map((e) => {
      const pos = lineCounter.linePos(e.pos[0]);
      return new InputRefused(
        `is not valid YAML: ${YAML_PROBLEMS[e.code] ?? `the parser stopped (${e.code})`}`,
        `${file}:${pos.line}:${pos.col}`,
      );
    }),
  };
}

/** The document's data, its aliases expanded within the limit. */
export function yamlData(file: string, doc: Document): unknown {
  try {
    return doc.toJS({ maxAliasCount: SUITE_LIMITS.maxAliasCount });
  } catch {
    // the one failure toJS has on a document without errors: the alias expansion limit
    throw new InputRefused(
      `expands its aliases (*name) beyond the ${count(SUITE_LIMITS.maxAliasCount)} nodes a suite file may`,
      `${file}:`,
    );
  }
}

/**
 * `given` (a path a suite names) resolved against the suite's folder `dir`: a problem when it, or
 * where its symbolic links lead, is outside that folder (unless `allowOutside`). A path that does
 * not exist is left to the reader to report.
 */
export function insideFolder(
  dir: string,
  given: string,
  allowOutside: boolean,
): { path: string } | { problem: string } {
  const resolved = path.resolve(dir, given);
  if (allowOutside) return { path: resolved };
  const within = (root: string, p: string) => {
    const rel = path.relative(root, p);
    return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
  };
  const hint = "(a suite's files stay in its folder; --allow-outside-paths lets them out)";
  if (!within(dir, resolved)) return { problem: `${given} is outside the suite's folder ${hint}` };
  let real: string;
  let realDir: string;
  try {
    realDir = fs.realpathSync(dir);
    real = fs.realpathSync(resolved);
  } catch {
    return { path: resolved };
  }
  if (!within(realDir, real))
    return { problem: `${given} leads outside the suite's folder through a symbolic link ${hint}` };
  return { path: resolved };
}
