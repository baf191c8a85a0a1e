/**
 * Where a JSON text goes wrong (src/json-syntax.ts): the place JSON.parse names, where it names one, as a line and
 * column; and one where it names none ("Unexpected token '}', "…" is not valid JSON"), or the text ends too soon.
 */
import t from 'tap';
import { jsonErrorOffset, jsonSyntaxProblem } from '../../src/json-syntax.js';

const why = (text: string): string => {
  try {
    JSON.parse(text);
  } catch (e) {
    return jsonSyntaxProblem(text, e);
  }
  throw new Error(`${text} is JSON`);
};

t.test('valid JSON has no error offset', async (t) => {
  for (const text of ['{}', '[]', ' 1 ', '"\\u00e9\\n"', '{"a":[1,{"b":null}],"c":-1.5e3,"d":true,"e":false}'])
    t.equal(jsonErrorOffset(text), -1, text);
  t.equal(jsonErrorOffset('['.repeat(100_000) + ']'.repeat(100_000)), -1, 'nested deeper than a stack');
});

t.test('the offset is where JSON.parse says it went wrong, whenever it says', async (t) => {
  const texts = [
    '{"a":1,}',
    '{"a" 1}',
    '{"a":1',
    '[1 2]',
    '{"a":1} x',
    "{'a':1}",
    '{"a":"x\ny"}',
    '"\\u12G4"',
    '01',
    '-',
    '1.',
    '{"a":1}}',
    '[1,]',
  ];
  for (const text of texts) {
    let message = '';
    try {
      JSON.parse(text);
    } catch (e) {
      message = (e as Error).message;
    }
    const m = /position (\d+)/.exec(message);
    if (m) t.equal(jsonErrorOffset(text), Number(m[1]), `${JSON.stringify(text)}: ${message}`);
    else t.ok(jsonErrorOffset(text) >= 0, `${JSON.stringify(text)}: ${message}`);
  }
});

t.test('the problem: why, at a line and column, without the offset or an excerpt of the text', async (t) => {
  t.equal(why('{\n  "a": 1,\n  }\n'), 'Expected double-quoted property name at line 3, column 3');
  t.equal(why('{\n  "a": }'), "Unexpected token '}' at line 2, column 8");
  t.equal(why('{"a": [1, 2'), "Expected ',' or ']' after array element at line 1, column 12");
  t.equal(why(''), 'Unexpected end of the text at line 1, column 1');
  t.equal(why('{"a": 1}\n\nx'), 'Unexpected non-whitespace character after JSON at line 3, column 1');
});
