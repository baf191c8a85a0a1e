/**
 * Record texts' keys kept as two-byte codes (src/store/key-dictionary.ts, through the text arena):
 * every text comes back byte for byte whatever its keys and strings hold, a text's keys take 2
 * bytes each once known, and what cannot be coded (control characters, a full dictionary, a key
 * sharing another's hash, a key too long) is kept as it is.
 */
import t from 'tap';
import { CODES, KeyDictionary } from '../../src/store/key-dictionary.js';
import { Tables } from '../../src/store/tables.js';
import { TextArena } from '../../src/store/text-arena.js';

/** Stores `text` in `arena`, its keys coded, and reads it back: [the text read, the bytes it takes]. */
function roundTrip(arena: TextArena, text: string): [string, number] {
  const h = arena.putCoded(text);
  return [arena.text(h), arena.byteLength(h)];
}

t.test('a text that ends with a string is not read past its end for a key', async (t) => {
  const dict = new KeyDictionary();
  // the text is `"abcd"`; the byte after it (another text, or a slab's padding) is a colon
  const buf = Buffer.from('"abcd":');
  const end = dict.encode(buf, 0, 6);
  t.equal(end, 6, 'nothing coded: the string is not followed by a colon within the text');
  t.equal(dict.decode(buf, 0, end), '"abcd"');
  t.equal(dict.size, 0, 'no key learned');
});

t.test('texts come back as put, whatever their keys and strings hold', async (t) => {
  const arena = new TextArena();
  const values: unknown[] = [
    { appId: 'a', workspaceId: 'w', nested: { appId: 'b', list: [{ appId: 'c' }, 'appId', '"appId":'] } },
    { 'a"b': 1, 'back\\slash': 2, 'é🙂': 3, '': 4, 'x:': '":', '\\': '\\"', '"': '"' },
    { v: 'a":b', w: '"key":"value"', x: '\\":', y: '"', z: ['":', '","', ':'] },
    { ['k'.repeat(70)]: 'a key longer than the longest kept', k: 1 },
    { lone: '\ud800', line: '\u2028', ctl: '\u0001\u001f', nul: '\u0000' }, // escaped by JSON.stringify
    [{ a: 1 }, { bb: 2 }, 'ccc', { dddd: [] }],
    'just a string',
    12.5,
    null,
  ];
  for (let round = 0; round < 2; round++)
    for (const v of values) {
      const text = JSON.stringify(v);
      const [back] = roundTrip(arena, text);
      if (back !== text) t.fail(`round ${round}: ${text} came back as ${back}`);
      // as the tables keep a record: without its leading `{"id":"<id>"`
      const kept = JSON.stringify({ id: 'r1', ...(typeof v === 'object' && v !== null ? v : { v }) }).slice(10);
      if (roundTrip(arena, kept)[0] !== kept) t.fail(`round ${round}: ${kept} (kept form) came back different`);
    }
  // past what the decode's buffer holds at 32 bytes a code: the text is measured first
  const long = JSON.stringify(Array.from({ length: 4_000 }, (_, i) => ({ ['k'.repeat(60)]: i, appId: `a${i}` })));
  t.equal(arena.text(arena.putCoded(long)), long, 'a text of 4,000 records with long keys came back');
  t.pass('every text came back');
});

t.test("a record's keys take 2 bytes each once known; its values stay as they are", async (t) => {
  const arena = new TextArena();
  const code = (i: number) =>
    JSON.stringify({
      appId: `app_${i}`,
      workspaceUserId: 'wu_1',
      userScopes: ['messages:read'],
      consumedAt: null,
      note: '"appId": in a value is no key',
    });
  const text = code(1);
  const [back, bytes] = roundTrip(arena, text);
  t.equal(back, text);
  const keys = ['"appId":', '"workspaceUserId":', '"userScopes":', '"consumedAt":', '"note":'];
  const saved = keys.reduce((n, k) => n + k.length - 2, 0);
  t.equal(bytes, Buffer.byteLength(text) - saved, `${saved} bytes saved: each key in 2 bytes, the value's text kept`);
  t.equal(roundTrip(arena, code(2))[1], Buffer.byteLength(code(2)) - saved, 'the next record uses the same codes');
});

t.test("a coded text takes only its coded bytes: the arena's end moves back, and a move keeps it coded", async (t) => {
  const arena = new TextArena();
  const text = JSON.stringify({ appId: 'a', workspaceUserId: 'w', userScopes: [], consumedAt: null });
  arena.putCoded(text); // its keys learned
  const h = arena.putCoded(text);
  const bytes = arena.byteLength(h);
  t.ok(bytes < Buffer.byteLength(text) - 30, `${bytes} bytes for ${Buffer.byteLength(text)}`);
  const next = arena.put('x');
  const entry = Math.ceil((4 + bytes) / 8) * 8;
  t.equal((next - h) * 8, entry, 'the next text begins right after the coded entry, not after the text as it was put');
  const live = arena.stats().liveBytes;
  const moved = arena.move(h);
  t.equal(arena.byteLength(moved), bytes, 'moved: still coded');
  t.equal(arena.text(moved), text);
  t.equal(arena.stats().liveBytes, live, 'live bytes counted at the coded size, before and after the move');
});

t.test('kept as they are: control characters, a key sharing a hash, a full dictionary', async (t) => {
  const arena = new TextArena();
  // JSON whitespace, as in a data file edited by hand: no byte below 0x20 can be read as a code
  const spaced = '{\n\t"appId": "a",\r\n\t"more": [1,\t2]\n}';
  t.same(roundTrip(arena, spaced), [spaced, Buffer.byteLength(spaced)], 'with control characters: stored as it is');
  const after = '{"appId":"a","more":"b",\n"last":1}'; // met after two keys were coded in place
  t.same(roundTrip(arena, after), [after, Buffer.byteLength(after)], 'a control character after keys: as it is');
  // "Aa" and "BB" have the same hash (31 × 65 + 97 = 31 × 66 + 66): the second is not coded
  const first = JSON.stringify({ Aa: 1 });
  const second = JSON.stringify({ BB: 1 });
  t.same(roundTrip(arena, first), [first, Buffer.byteLength(first) - 3]);
  t.same(roundTrip(arena, second), [second, Buffer.byteLength(second)], 'a key sharing a hash: kept as it is');
  t.same(roundTrip(arena, first), [first, Buffer.byteLength(first) - 3], 'the first still coded');

  const dict = new KeyDictionary();
  const buf = Buffer.alloc(1 << 16);
  const through = (text: string): [string, number] => {
    const n = buf.write(text, 0);
    const end = dict.encode(buf, 0, n);
    return [dict.decode(buf, 0, end), end];
  };
  for (let i = 0; i < CODES; i += 100) {
    const text = JSON.stringify(Object.fromEntries(Array.from({ length: 100 }, (_, k) => [`key${i + k}`, i + k])));
    const [back, bytes] = through(text);
    if (back !== text || bytes >= Buffer.byteLength(text)) t.fail(`keys from ${i}: not coded or not back`);
  }
  t.equal(dict.size, CODES, 'the dictionary is full');
  const late = JSON.stringify({ lateKey: 1, key5: 2 });
  t.same(through(late), [late, Buffer.byteLength(late) - ('"key5":'.length - 2)], 'full: a new key stays as it is');
});

t.test('a table codes the texts written once it holds codedFrom records, and reads both kinds', async (t) => {
  const tables = new Tables({ codedFrom: 100 });
  const put = (i: number) => {
    const json = JSON.stringify({ id: `r${i}`, appId: 'a', workspaceUserId: 'w', userScopes: [] });
    tables.apply([{ table: 'tokens', id: `r${i}`, json }]);
    return json;
  };
  const before = tables.textStats().liveBytes;
  for (let i = 0; i < 100; i++) put(i);
  const small = tables.textStats().liveBytes - before;
  for (let i = 100; i < 200; i++) put(i);
  const large = tables.textStats().liveBytes - before - small;
  t.ok(large < small * 0.8, `100 texts written past 100 records: ${large} bytes, the first 100: ${small}`);
  tables.apply([{ table: 'apps', id: 'x', json: JSON.stringify({ id: 'x', appId: 'a' }) }]);
  t.same(tables.get('tokens', 'r5'), { id: 'r5', appId: 'a', workspaceUserId: 'w', userScopes: [] }, 'uncoded');
  t.same(tables.get('tokens', 'r150'), { id: 'r150', appId: 'a', workspaceUserId: 'w', userScopes: [] }, 'coded');
  t.equal(tables.getJson('apps', 'x'), ',"appId":"a"}', 'a small table: read back as written');
});
