/**
 * The fields simpleForm reads are strings of their own, not slices of the request's text: the rate
 * limiter keeps a key made of the client-id for a minute, and a slice would keep the whole request
 * body alive with it (a heap snapshot under the token bench found 5.6 MB of bodies held that way).
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import t from 'tap';
import { simpleForm } from '../../src/server/routes/token-form.js';
import { must } from '../../src/must.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const boundary = 'XyZ-boundary-0189';
const part = (name: string, value: string) =>
  `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;

t.test('a kept field does not keep its form alive', (t) => {
  const forms = 2000;
  // each form ~40 KB: its three fields and seven parts of padding, all within FORM_LIMITS
  const padding = 'p'.repeat(4000);
  const kept: string[] = [];
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < forms; i++) {
    let body = part('client-id', `client-${String(i).padStart(20, '0')}`);
    body += part('client-secret', 's'.repeat(64)) + part('code', `code-${i}-${'c'.repeat(40)}`);
    for (let k = 0; k < 7; k++) body += part(`pad${k}`, padding);
    const fields = simpleForm(Buffer.from(`${body}--${boundary}--`, 'latin1'), boundary);
    if (!fields) return (t.fail(`form ${i} was not read as a plain form`), t.end());
    kept.push(must(fields['client-id']));
  }
  gc();
  const held = process.memoryUsage().heapUsed - before;
  // held as slices the bodies would be ~80 MB; as strings of their own, 2,000 short strings
  t.ok(held < 8 * 1024 * 1024, `2,000 kept client-ids hold ${(held / 1024 / 1024).toFixed(1)} MB of heap`);
  t.equal(kept[1999], `client-${String(1999).padStart(20, '0')}`);
  t.end();
});
