/**
 * The one error path: a status per code, parser errors mapped by their fields, config checked before anything is
 * written.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import t from 'tap';
import { AppError, ERROR_STATUS, toErrorResponse, invalidClient, unknownClient } from '../../src/errors.js';
import { asAppError } from '../../src/server/respond.js';
import { loadConfig, parseAddressList } from '../../src/config.js';
import { startTestDaemon } from '../helpers/daemon.js';

t.test('every wire code has one status, and its constructor uses it', async (t) => {
  for (const [code, status] of Object.entries(ERROR_STATUS))
    t.equal(new AppError(code as keyof typeof ERROR_STATUS, 'x').status, status, code);
  t.equal(invalidClient().status, 401, 'a failed client authentication is 401 wherever it happens');
  t.equal(
    unknownClient().status,
    400,
    'an unknown clientId in a consent or grant request is a bad request, not a failed authentication',
  );
  t.same(
    toErrorResponse(new Error('secret detail')),
    {
      status: 500,
      body: { code: 'internal_error', message: 'The daemon hit an internal error; it has been logged.' },
      headers: {},
    },
    'anything else is a bland 500',
  );
});

t.test('parser errors are classified by their fields, never their message text', async (t) => {
  const httpError = (status: number, type: string) =>
    Object.assign(new Error('whatever the library says'), { status, expose: true, type });
  t.match(asAppError(httpError(400, 'entity.parse.failed')), { code: 'invalid_json', status: 400 });
  t.match(asAppError(httpError(413, 'entity.too.large')), { code: 'payload_too_large' });
  t.match(asAppError(httpError(415, 'encoding.unsupported')), { code: 'unsupported_media_type' });
  t.match(asAppError(httpError(400, 'parameters.too.many')), { code: 'invalid_request' });
  t.match(asAppError(httpError(400, 'request.size.invalid')), { code: 'invalid_request' });
  t.match(
    asAppError(Object.assign(new Error('Field value too long'), { name: 'MulterError', code: 'LIMIT_FIELD_VALUE' })),
    { code: 'payload_too_large' },
  );
  t.match(asAppError(Object.assign(new Error('Too many fields'), { name: 'MulterError', code: 'LIMIT_FIELD_COUNT' })), {
    code: 'invalid_request',
  });
  t.match(asAppError(Object.assign(new Error('incorrect header check'), { code: 'Z_DATA_ERROR' })), {
    code: 'invalid_request',
  });
  t.match(asAppError(new URIError('URI malformed')), { code: 'invalid_request' });
  const bug = new TypeError('x is undefined');
  t.equal(asAppError(bug), bug, 'a bug stays a bug (and becomes a 500)');
  t.equal(
    toErrorResponse(
      asAppError(Object.assign(new Error('stream encoding should not be set'), { status: 500, expose: false })),
    ).status,
    500,
    'a 5xx http-error is not exposed',
  );
});

t.test('a body whose Content-Encoding is broken or unknown gets the JSON error body, not a 500', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const post = (body: Uint8Array, encoding: string) =>
    fetch(`${d.url}${d.mgmt}/apps`, {
      method: 'POST',
      headers: { authtoken: d.token, 'content-type': 'application/json', 'content-encoding': encoding },
      body: new Uint8Array(body),
    });
  let res = await post(Buffer.from('{"not":"gzip"}'), 'gzip');
  t.equal(res.status, 400);
  t.match(await res.json(), { code: 'invalid_request' });
  res = await post(Buffer.from('{}'), 'br-nope');
  t.equal(res.status, 415);
  t.match(await res.json(), { code: 'unsupported_media_type' });
  res = await post(zlib.gzipSync('{"name":'), 'gzip');
  t.equal(res.status, 400);
  t.match(await res.json(), { code: 'invalid_json' });
  t.notMatch(d.logs(), /"level":"error"/, 'nothing logged as an internal error');
});

t.test('configuration is checked in full when it loads, naming the key', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-cfg-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  t.throws(
    () => loadConfig({ dataDir: dir, egressAllow: '10.0.0.0/99' }, {}),
    /egressAllow: "10\.0\.0\.0\/99" is not an IP address or CIDR range/,
  );
  t.throws(
    () => loadConfig({ dataDir: dir }, { APPREG_EGRESS_ALLOW: 'intranet.local' }),
    /APPREG_EGRESS_ALLOW: egressAllow/,
  );
  t.throws(
    () => loadConfig({ dataDir: dir, publicUrl: 'appreg.example.com' }, {}),
    /publicUrl must be an http\(s\) URL/,
  );
  t.throws(() => loadConfig({ dataDir: dir }, { APPREG_APP_URL: 'ftp://x' }), /appUrl must be an http\(s\) URL/);
  t.same(parseAddressList(' 10.1.2.3, 192.168.0.0/16 ,fd00::/8'), [
    { address: '10.1.2.3', bits: undefined, type: 'ipv4' },
    { address: '192.168.0.0', bits: 16, type: 'ipv4' },
    { address: 'fd00::', bits: 8, type: 'ipv6' },
  ]);
  t.same(fs.readdirSync(dir), [], 'nothing was written');
});
