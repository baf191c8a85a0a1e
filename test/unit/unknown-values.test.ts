/**
 * The checked readers of values of unknown type (src/unknown-values.ts) that replace `as` casts on what a
 * `catch` caught and on JSON of unknown shape: each answers for every kind of value, never a wrong guess.
 */
import t from 'tap';
import {
  errnoOf,
  fieldOf,
  fieldsOf,
  isRecord,
  itemsOf,
  messageOf,
  recordOr,
  stackOf,
  stringOr,
} from '../../src/unknown-values.js';

t.test('messageOf and stackOf read an Error, and put anything else thrown into words', async (t) => {
  const e = new Error('disk full');
  t.equal(messageOf(e), 'disk full');
  t.match(stackOf(e), /^Error: disk full\n\s+at /);
  t.equal(messageOf('plain text'), 'plain text');
  t.equal(messageOf(undefined), 'undefined');
  t.equal(messageOf({ code: 1 }), '[object Object]');
  t.equal(stackOf(42), '42');
  const noStack = new Error('bare');
  noStack.stack = undefined;
  t.equal(stackOf(noStack), 'bare');
});

t.test('errnoOf reads a system error code only when one is there and is text', async (t) => {
  const enoent = Object.assign(new Error('no file'), { code: 'ENOENT' });
  t.equal(errnoOf(enoent), 'ENOENT');
  t.equal(errnoOf({ code: 'EADDRINUSE' }), 'EADDRINUSE');
  t.equal(errnoOf({ code: 7 }), undefined);
  t.equal(errnoOf(new Error('no code')), undefined);
  t.equal(errnoOf(null), undefined);
  t.equal(errnoOf('ENOENT'), undefined);
});

t.test('isRecord, recordOr and stringOr accept exactly a plain object or a string', async (t) => {
  t.ok(isRecord({ a: 1 }));
  t.notOk(isRecord([1]));
  t.notOk(isRecord(null));
  t.notOk(isRecord('x'));
  t.same(recordOr({ a: 1 }), { a: 1 });
  t.equal(recordOr([]), undefined);
  t.equal(stringOr('x'), 'x');
  t.equal(stringOr(1), undefined);
});

t.test('fieldOf reads a field of a plain object only', async (t) => {
  t.equal(fieldOf({ appId: 'A1' }, 'appId'), 'A1');
  t.equal(fieldOf({ appId: 'A1' }, 'botUserId'), undefined);
  t.equal(fieldOf(['A1'], '0'), undefined, 'an array is no record');
  t.equal(fieldOf(undefined, 'appId'), undefined);
  t.equal(fieldOf('text', 'length'), undefined);
});

t.test('fieldsOf and itemsOf read an object or a list, and anything else as an empty one', async (t) => {
  const o = { a: 1 };
  t.equal(fieldsOf(o), o, 'the object itself');
  t.same(fieldsOf([1]), {});
  t.same(fieldsOf(null), {});
  t.same(fieldsOf('x'), {});
  const l = [1, 2];
  t.equal(itemsOf(l), l, 'the list itself');
  t.same(itemsOf({ 0: 1 }), []);
  t.same(itemsOf(undefined), []);
});
