/**
 * The token endpoint reads a plain multipart form itself (simpleForm) and leaves everything else to
 * multer. The one property that makes that safe: whenever simpleForm answers, multer, given the same
 * bytes and limits, answers the same fields. Checked on generated forms — well-formed ones, and the
 * same forms broken in the ways a careless or hostile client breaks them (a byte changed, inserted or
 * cut, a part doubled, a header respelled, the last delimiter lost) — against multer itself.
 */
import { Readable } from 'node:stream';
import type { IncomingMessage, ServerResponse } from 'node:http';
import t from 'tap';
import fc from 'fast-check';
import multer from 'multer';
import { simpleForm, FORM_LIMITS } from '../../src/server/routes/token-form.js';

type Outcome = { ok: true; fields: Record<string, unknown> } | { ok: false; error: string };

/** What multer's `.none()` makes of `body`, sent with `multipart/form-data; boundary=<boundary>`. */
function viaMulter(body: Buffer, boundary: string): Promise<Outcome> {
  const req = Readable.from([body]) as unknown as IncomingMessage & { body?: Record<string, unknown> };
  req.headers = { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(body.length) };
  return new Promise((resolve) => {
    multer({ limits: FORM_LIMITS }).none()(req as never, {} as ServerResponse as never, (err?: unknown) =>
      resolve(err ? { ok: false, error: String((err as Error).message) } : { ok: true, fields: { ...req.body } }),
    );
  });
}

const B_CHARS = 'abcXYZ0189-_.';
const boundary = fc.string({ unit: fc.constantFrom(...B_CHARS), minLength: 1, maxLength: 30 });
const name = fc.oneof(
  { arbitrary: fc.constantFrom('client-id', 'client-secret', 'code', 'grant_type', 'a', 'a.b', 'x-y'), weight: 5 },
  { arbitrary: fc.string({ unit: fc.constantFrom(...'abcAB09_-.[]" é'), minLength: 0, maxLength: 12 }), weight: 1 },
);
/** Field values: mostly what a client sends, sometimes with CR, LF, dashes and bytes over 127. */
const value = fc.oneof(
  { arbitrary: fc.string({ unit: fc.constantFrom(...'abcdefXYZ0123456789_-'), maxLength: 60 }), weight: 4 },
  { arbitrary: fc.string({ unit: fc.constantFrom(...'ab-\r\n\u00e9 \t='), maxLength: 40 }), weight: 1 },
);
const part = (b: string, n: string, v: string, header?: string) =>
  `--${b}\r\n${header ?? `Content-Disposition: form-data; name="${n}"`}\r\n\r\n${v}\r\n`;

/** A well-formed form of 1–12 fields with the plain header or one of its legal respellings. */
const form = fc
  .record({
    b: boundary,
    fields: fc.uniqueArray(fc.tuple(name, value), { selector: ([n]) => n, minLength: 1, maxLength: 12 }),
    spelling: fc.oneof(
      { arbitrary: fc.constantFrom('plain', 'lower', 'nospace'), weight: 4 },
      { arbitrary: fc.constantFrom('filename', 'typed'), weight: 1 },
    ),
    end: fc.constantFrom('--', '--\r\n'),
  })
  .map(({ b, fields, spelling, end }) => {
    const header = (n: string) =>
      ({
        plain: `Content-Disposition: form-data; name="${n}"`,
        lower: `content-disposition: form-data; name="${n}"`,
        nospace: `Content-Disposition:form-data;name="${n}"`,
        filename: `Content-Disposition: form-data; name="${n}"; filename="f.txt"`,
        typed: `Content-Disposition: form-data; name="${n}"\r\nContent-Type: text/plain`,
      })[spelling];
    return { b, text: fields.map(([n, v]) => part(b, n, v, header(n))).join('') + `--${b}${end}` };
  });

/** Forms of the plain shape the official SDK sends: every one must be taken by simpleForm. */
const plainForm = fc
  .record({
    b: boundary,
    fields: fc.uniqueArray(
      fc.tuple(
        fc.string({ unit: fc.constantFrom(...'abcxyz-_.09'), minLength: 1, maxLength: 20 }),
        fc.string({ unit: fc.constantFrom(...'abcXYZ019_-=+/ '), maxLength: 200 }),
      ),
      { selector: ([n]) => n, minLength: 1, maxLength: 10 },
    ),
  })
  .map(({ b, fields }) => ({ b, text: fields.map(([n, v]) => part(b, n, v)).join('') + `--${b}--\r\n` }));

/** The same form broken one way. */
const broken = fc
  .tuple(
    fc.oneof({ arbitrary: plainForm, weight: 3 }, { arbitrary: form, weight: 1 }),
    fc.oneof(
      { arbitrary: fc.constantFrom('flip', 'insert'), weight: 3 },
      { arbitrary: fc.constantFrom('cut', 'double', 'nolast', 'preamble', 'epilogue', 'lf'), weight: 1 },
    ),
    fc.nat(),
    fc.oneof(
      { arbitrary: fc.integer({ min: 32, max: 126 }), weight: 4 },
      { arbitrary: fc.integer({ min: 0, max: 255 }), weight: 1 },
    ),
  )
  .map(([{ b, text }, how, at, byte]) => {
    const i = at % (text.length + 1);
    const c = String.fromCharCode(byte);
    const out = {
      flip: text.slice(0, i) + c + text.slice(i + 1),
      insert: text.slice(0, i) + c + text.slice(i),
      cut: text.slice(0, i),
      double: text.replace(
        `--${b}\r\n`,
        `--${b}\r\n` + text.slice(0, text.indexOf('\r\n\r\n') + 4) + 'x\r\n--' + b + '\r\n',
      ),
      nolast: text.slice(0, text.lastIndexOf(`--${b}--`)),
      preamble: `hello\r\n${text}`,
      epilogue: `${text}\r\nbye`,
      lf: text.replace(/\r\n/g, '\n'),
    }[how];
    return { b, text: out };
  });

type Reader = (body: Buffer, boundary: string) => Record<string, string> | undefined;

/** The property on one body: the fast reader answers nothing, or exactly what multer answers. */
const agreesWith =
  (read: Reader) =>
  async ({ b, text }: { b: string; text: string }): Promise<boolean> => {
    const body = Buffer.from(text, 'latin1');
    const fast = read(body, b);
    if (fast === undefined) return true;
    const slow = await viaMulter(body, b);
    return slow.ok && JSON.stringify(slow.fields) === JSON.stringify({ ...fast });
  };
const agrees = agreesWith(simpleForm);

t.test('where simpleForm answers, multer answers the same fields', async (t) => {
  const taken = { form: 0, broken: 0 };
  const counted = (k: keyof typeof taken) => async (f: { b: string; text: string }) => {
    if (simpleForm(Buffer.from(f.text, 'latin1'), f.b)) taken[k]++;
    return agrees(f);
  };
  await fc.assert(fc.asyncProperty(form, counted('form')), { numRuns: 400, seed: 20261128 });
  await fc.assert(fc.asyncProperty(broken, counted('broken')), { numRuns: 1500, seed: 20261128 });
  // the broken forms simpleForm still reads (a changed byte inside a value, a lost CRLF after the last delimiter…)
  // are where a difference would show: there must be many
  t.ok(taken.broken >= 100, `simpleForm read ${taken.broken} of 1,500 broken forms, multer the same fields each time`);
  t.ok(taken.form >= 40, `and ${taken.form} of 400 well-formed ones of every spelling`);
});

t.test('the check is not empty: simpleForm takes every plain form, and multer agrees on each', async (t) => {
  let taken = 0;
  await fc.assert(
    fc.asyncProperty(plainForm, async (f) => {
      if (simpleForm(Buffer.from(f.text, 'latin1'), f.b)) taken++;
      return agrees(f);
    }),
    { numRuns: 300, seed: 7 },
  );
  t.equal(taken, 300, 'simpleForm took all 300 plain forms');
});

t.test('a disagreement would be caught: a reader that trims values, or takes a broken form, fails', async (t) => {
  const trims: Reader = (body, b) => {
    const f = simpleForm(body, b);
    return f && Object.fromEntries(Object.entries(f).map(([k, v]) => [k, v.trim()]));
  };
  const lenient: Reader = (body, b) =>
    simpleForm(body, b) ?? simpleForm(Buffer.concat([body, Buffer.from(`\r\n--${b}--`)]), b);
  for (const [what, read, arb] of [
    ['trims values', trims, form],
    ['closes a form whose last delimiter is missing', lenient, broken],
  ] as const) {
    const r = await fc.check(fc.asyncProperty(arb, agreesWith(read)), { numRuns: 1500, seed: 20261128 });
    t.ok(r.failed, `a reader that ${what} is caught`);
  }
});
