/**
 * Where a JSON text goes wrong, as a person finds it in an editor: "line 3, column 5". JSON.parse says why, but gives
 * a character offset (Node 20), or no place at all ("Unexpected token '}', "…" is not valid JSON"), depending on the
 * error and the Node version; the place is found here by reading the text up to its first mistake.
 */

/** The offset of the first character where `text` stops being JSON (its length when it ends too soon); -1 if it is. */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const fail = (): never => {
    throw STOP;
  };
  const space = () => {
    while (i < text.length && ' \t\n\r'.includes(text.charAt(i))) i++;
  };
  const digits = (atLeastOne: boolean) => {
    const from = i;
    while (i < text.length && text.charAt(i) >= '0' && text.charAt(i) <= '9') i++;
    if (atLeastOne && i === from) fail();
  };
  const word = (w: string) => {
    for (const ch of w) {
      if (text.charAt(i) !== ch) fail();
      i++;
    }
  };
  const string = () => {
    i++; // the opening quote
    for (;;) {
      if (i >= text.length) fail();
      const c = text.charCodeAt(i);
      if (c === 0x22) return void i++;
      if (c < 0x20) fail();
      if (c === 0x5c) {
        i++;
        const e = text.charAt(i);
        if (e === 'u') {
          for (let k = 0; k < 4; k++) {
            i++;
            if (!/^[0-9a-fA-F]$/.test(text.charAt(i))) fail();
          }
        } else if (!'"\\/bfnrt'.includes(e) || e === '') fail();
      }
      i++;
    }
  };
  const number = () => {
    if (text.charAt(i) === '-') i++;
    if (text.charAt(i) === '0') i++;
    else digits(true);
    if (text.charAt(i) === '.') {
      i++;
      digits(true);
    }
    if (text.charAt(i) === 'e' || text.charAt(i) === 'E') {
      i++;
      if (text.charAt(i) === '+' || text.charAt(i) === '-') i++;
      digits(true);
    }
  };
  // containers by hand, not by recursion: a text nested deeper than the stack is still placed
  const open: string[] = [];
  const key = () => {
    space();
    if (text.charAt(i) !== '"') fail();
    string();
    space();
    if (text.charAt(i) !== ':') fail();
    i++;
  };
  /** One value; true when it opened a container whose first value comes next. */
  const value = (): boolean => {
    space();
    const c = text.charAt(i);
    if (c === '{' || c === '[') {
      i++;
      space();
      if (text.charAt(i) === (c === '{' ? '}' : ']')) return (i++, false);
      open.push(c);
      if (c === '{') key();
      return true;
    }
    if (c === '"') string();
    else if (c === 't') word('true');
    else if (c === 'f') word('false');
    else if (c === 'n') word('null');
    else if (c === '-' || (c >= '0' && c <= '9')) number();
    else fail();
    return false;
  };
  try {
    for (let more = true; ;) {
      if (more) {
        more = value();
        continue;
      }
      if (!open.length) break;
      // after a value in the innermost container: a comma and the next one, or its end
      space();
      const inside = open.at(-1);
      const c = text.charAt(i);
      if (c === ',') {
        i++;
        if (inside === '{') key();
        more = true;
      } else if (c === (inside === '{' ? '}' : ']')) {
        i++;
        open.pop();
      } else fail();
    }
    space();
    if (i < text.length) fail();
    return -1;
  } catch (e) {
    if (e === STOP) return i;
    throw e;
  }
}
const STOP = Symbol('not JSON');

/** 1-based line and column of `offset` in `text`. */
function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lastBreak = before.lastIndexOf('\n');
  return { line: before.split('\n').length, column: offset - lastBreak };
}

/**
 * Why JSON.parse refused `text`, and where: "Expected double-quoted property name at line 3, column 3". `err` is what
 * JSON.parse threw; its message loses the offset and the quoted excerpt that some Node versions add.
 */
export function jsonSyntaxProblem(text: string, err: unknown): string {
  const why = (err instanceof Error ? err.message : String(err))
    .replace(/,? "[\s\S]*" is not valid JSON$/, '')
    .replace(/ (in JSON )?at position \d+[\s\S]*$/, '')
    .replace(/^Unexpected end of JSON input$/, 'Unexpected end of the text');
  const at = jsonErrorOffset(text);
  if (at < 0) return why;
  const { line, column } = lineColumn(text, at);
  return `${why} at line ${line}, column ${column}`;
}
