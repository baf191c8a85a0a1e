/**
 * The token endpoint checks a form's content type and each part's header without a RegExp when
 * they are spelled as clients send them, and with the RegExp otherwise. Whatever the spelling, the
 * answer must be the RegExp's: here against generated headers, plain, almost plain and broken.
 */
import t from 'tap';
import { plainBoundary, plainPartName } from '../../src/server/routes/token-form.js';

// the shapes the endpoint accepts (docs/protocol.md §3): the reference the fast checks must agree with
const MULTIPART = /^multipart\/form-data; ?boundary=(?:([\w'()+,\-./:=?]{1,70})|"([\w'()+,\-./:=?]{1,70})")$/i;
const PART_HEADER = /^content-disposition: ?form-data; ?name="([\w.-]{1,100})"$/i;

/** A small deterministic generator (the same cases on every run). */
function rng(seed: number) {
  let x = seed;
  return (n: number) => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 8) % n;
  };
}
const ANY = 'aZ09_.-\'()+,/:=?" ;é\u0000\t~[]';

/**
 * Heads followed by values of 0 to max + 2 characters of `allowed` (a third with one of any kind);
 * plain, quoted, or half quoted.
 */
function texts(r: (n: number) => number, heads: string[], allowed: string, max: number, count: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const len = [0, 1, 2, max - 1, max, max + 1, r(max + 3)][r(7)] ?? 0;
    let v = '';
    for (let j = 0; j < len; j++) v += allowed[r(allowed.length)] ?? 'a';
    // a third of them with one character of any kind somewhere
    if (len && !r(3)) {
      const at = r(len);
      v = `${v.slice(0, at)}${ANY[r(ANY.length)] ?? 'a'}${v.slice(at + 1)}`;
    }
    const head = heads[r(heads.length)] ?? '';
    out.push([`${head}${v}`, `${head}"${v}"`, `${head}"${v}`, `${head}${v}"`][r(4)] ?? '');
  }
  return out;
}

/** The fast check answers as the RegExp does on every case, and both answers come up often enough. */
function agrees(
  t: Tap.Test,
  cases: string[],
  fast: (s: string) => string | undefined,
  reference: (s: string) => string | undefined,
): void {
  let taken = 0;
  for (const c of cases) {
    const want = reference(c);
    if (want !== undefined) taken++;
    if (fast(c) !== want) t.fail(`${JSON.stringify(c)}: ${fast(c)} against ${want}`);
  }
  t.ok(
    taken > cases.length / 20 && taken < cases.length / 2,
    `both answers are exercised (${taken} of ${cases.length} taken)`,
  );
}

t.test('plainBoundary answers as the content-type RegExp does', async (t) => {
  const heads = [
    'multipart/form-data; boundary=',
    'multipart/form-data;boundary=',
    'Multipart/Form-Data; Boundary=',
    'multipart/form-data;  boundary=',
    'multipart/form-data; boundary= ',
    'multipart/form-datax; boundary=',
    'text/plain; boundary=',
    '',
  ];
  const cases = texts(rng(1), heads, "aZ09_.-'()+,/:=?", 70, 4000);
  cases.push('multipart/form-data; boundary=----formdata-undici-0123456789', 'multipart/form-data; boundary=');
  agrees(t, cases, plainBoundary, (c) => {
    const m = MULTIPART.exec(c);
    return m ? (m[1] ?? m[2]) : undefined;
  });
  t.equal(plainBoundary('multipart/form-data; boundary=----formdata-undici-0123'), '----formdata-undici-0123');
});

t.test('plainPartName answers as the part-header RegExp does', async (t) => {
  const heads = [
    'Content-Disposition: form-data; name=',
    'content-disposition: form-data; name=',
    'Content-Disposition:form-data;name=',
    'Content-Disposition: form-data;  name=',
    'Content-Disposition: form-data; filename=',
    'Content-Type: form-data; name=',
    '',
  ];
  agrees(t, texts(rng(2), heads, 'aZ09_.-', 100, 4000), plainPartName, (c) => PART_HEADER.exec(c)?.[1]);
  t.equal(plainPartName('Content-Disposition: form-data; name="client-id"'), 'client-id');
});
