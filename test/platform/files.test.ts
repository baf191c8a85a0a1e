/**
 * Files as the official SDK uploads them: token, bytes to the upload host, complete; on messages; read back; limits;
 * scope; restarts.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { startTestDaemon, tempDir } from '../helpers/daemon.js';
import { until } from '../helpers/until.js';
import { startReceiver } from '../helpers/receiver.js';
import { secondWorkspace } from '../fixtures/redirects-flow.js';
import { installPlatformApp, platformClient, PLATFORM_SCOPES, sdkUploadFile } from '../helpers/platform-client.js';
import { must } from '../../src/must.js';

const WITH_FILES = [...PLATFORM_SCOPES, 'files:write'];
const blobsIn = (dataDir: string) => fs.readdirSync(path.join(dataDir, 'files'));

t.test(
  'the SDK upload sequence, the file on a message and in NEW_MESSAGE, read back by tokens of the workspace',
  async (t) => {
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    rx.on('/events', { text: 'ok' });
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const a = await installPlatformApp(d, { name: 'uploader', userScopes: WITH_FILES, botScopes: WITH_FILES });
    const b = await installPlatformApp(d, { name: 'listener', events: ['NEW_MESSAGE'], eventsUrl: `${rx.url}/events` });
    rx.secret = b.app.signingSecret;
    const general = (await a.bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
    const bytes = Buffer.from('week,builds\n47,12\n');

    // step by step, as FilesApiClientV1 and FileuploadApiClientV1 do it
    const tok = await a.bot.getUploadToken('report.csv', bytes.length);
    t.equal(tok.status, 200);
    t.type(tok.body.token, 'string');
    const up = await a.bot.postUpload(tok.body, bytes, 'report.csv', 'text/csv');
    t.equal(up.status, 200);
    t.match(up.body, {
      original: { mimeType: 'text/csv', size: bytes.length, requestedFileUploadId: /^file_/, waveform: [] },
      thumbs: [],
    });
    t.equal((await a.bot.postUpload(tok.body, bytes, 'report.csv')).status, 401, 'an upload token is used once');
    t.type(up.body.signature, 'string', 'V1.CompleteFileUpload.signature');
    const altered = await a.bot.completeFileUpload({
      ...up.body,
      original: { ...up.body.original },
      signature: 'made-up',
    });
    t.equal(altered.status, 400, 'an altered answer is refused');
    t.match(altered.body, { code: 'invalid_request', details: [{ pointer: '/signature' }] });
    const done = await a.bot.completeFileUpload(up.body);
    t.equal(done.status, 200, 'the unchanged one completes after it');
    t.match(done.body, {
      id: up.body.original.requestedFileUploadId,
      name: 'report.csv',
      path: `${d.url}/files/${up.body.original.requestedFileUploadId}`,
    });
    t.equal((await a.bot.completeFileUpload(up.body)).status, 404, 'an upload is completed once');
    const fileId = done.body.id;
    t.same(blobsIn(d.dataDir), [fileId], 'the bytes are kept under the file id, not the client’s name');
    t.equal(fs.statSync(path.join(d.dataDir, 'files', fileId)).mode & 0o777, 0o600);

    // attached to a message (MessageRequest.files: ids)
    const posted = await a.bot.postMessageToChannel(general, 'the weekly report', { files: [fileId] });
    t.equal(posted.status, 200);
    t.match(posted.body.files, [
      { id: fileId, owner: a.tokens.botId, name: 'report.csv', mimeType: 'text/csv', path: done.body.path },
    ]);
    t.match(
      (await a.user.fetchMessage(posted.body.id, general)).body.files,
      [{ id: fileId }],
      'shown in the message view',
    );
    const [ev] = await rx.waitFor(1);
    t.match(
      JSON.parse(must(ev).body.body),
      { mId: posted.body.id, f: [{ id: fileId, name: 'report.csv', path: done.body.path }] },
      'and in NEW_MESSAGE’s f',
    );
    const notMine = await a.user.postMessageToChannel(general, 'not my file', { files: [fileId] });
    t.equal(notMine.status, 400, 'only the uploader attaches a file');
    t.equal((await a.bot.postMessageToChannel(general, 'x', { files: ['file_nope'] })).status, 400);
    const scheduled = await a.bot.createScheduledMessage({
      channelId: general,
      text: 'later',
      sendAt: Date.now() + 60_000,
      files: [fileId],
    });
    t.equal(scheduled.status, 200, 'a scheduled message carries files too (scheduled.test.ts posts them)');
    t.match(scheduled.body.files, [{ id: fileId, name: 'report.csv' }]);

    // read back: the SDK's files.fetchFile (token + x-app-token), another app of the workspace, a person's Authtoken
    for (const [who, res] of [
      ['the uploader', await a.bot.fetchFile(done.body.path)],
      ['another app', await b.user.fetchFile(done.body.path)],
      ['a person', await fetch(done.body.path, { headers: { authtoken: d.token } })],
    ] as const) {
      t.equal(res.status, 200, who);
      t.same(Buffer.from(await res.arrayBuffer()), bytes, `${who} reads the bytes`);
      t.equal(res.headers.get('content-type'), 'text/csv');
      t.match(res.headers.get('content-disposition'), /^attachment; filename\*=UTF-8''report\.csv$/);
    }
    t.equal((await fetch(done.body.path)).status, 401, 'no token, no file');
    const noRead = await installPlatformApp(d, {
      name: 'no-read',
      userScopes: ['channels:list'],
      botScopes: ['channels:list'],
    });
    const denied = await noRead.user.fetchFile(done.body.path);
    t.equal(denied.status, 403);
    t.equal(((await denied.json()) as any).code, 'missing_scope');
    t.equal((await a.bot.fetchFile(`${d.url}/files/file_nope`)).status, 404);
  },
);

t.test('a token of another workspace gets 404 for the file', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const a = await installPlatformApp(d, { userScopes: WITH_FILES, botScopes: WITH_FILES });
  const file = await sdkUploadFile(a.user, Buffer.from('secret plans'), 'plans.txt', 'text/plain');
  t.equal(file.status, 200);
  const ws2 = await secondWorkspace(d);
  const there = await installPlatformApp(d, {
    as: ws2.as,
  });
  const res = await there.user.fetchFile(file.body.path);
  t.equal(res.status, 404, 'an app token of another workspace');
  t.equal(((await res.json()) as any).code, 'not_found');
  t.equal(
    (await fetch(file.body.path, { headers: { authtoken: ws2.as.token } })).status,
    404,
    'a person of another workspace',
  );
  const g2 = (await there.user.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
  t.equal((await there.user.postMessageToChannel(g2, 'steal', { files: [file.body.id] })).status, 400, 'nor attach it');
});

t.test('limits: over-size is 413 and nothing is kept; a missing scope is 403 missing_scope', async (t) => {
  const d = await startTestDaemon({ config: { filesMaxBytes: 100, filesTotalMaxBytes: 250 } });
  t.teardown(() => d.stop());
  const a = await installPlatformApp(d, { userScopes: WITH_FILES, botScopes: WITH_FILES });

  const big = await a.bot.getUploadToken('big.bin', 101);
  t.equal(big.status, 413, 'a declared length over filesMaxBytes');
  t.equal(big.body.code, 'payload_too_large');
  // a token for 10 bytes, then 5,000 sent: refused while reading, the partial bytes removed
  const tok = await a.bot.getUploadToken('liar.bin', 10);
  const lied = await a.bot.postUpload(tok.body, Buffer.alloc(5000, 1), 'liar.bin');
  t.equal(lied.status, 413, 'more bytes than the token allows');
  t.equal(lied.body.code, 'payload_too_large');
  t.same(blobsIn(d.dataDir), [], 'nothing kept');

  t.equal((await sdkUploadFile(a.bot, Buffer.alloc(100, 2), 'one.bin')).status, 200);
  t.equal((await sdkUploadFile(a.bot, Buffer.alloc(100, 3), 'two.bin')).status, 200);
  const third = await sdkUploadFile(a.bot, Buffer.alloc(100, 4), 'three.bin');
  t.equal(third.status, 413, 'over filesTotalMaxBytes');
  t.equal(blobsIn(d.dataDir).length, 2);

  const wrongField = new FormData();
  wrongField.append('upload', new Blob(['x']), 'x.txt');
  const t2 = await a.bot.getUploadToken('x.txt', 1);
  const bad = await fetch(`${d.url}/upload/files`, {
    method: 'POST',
    headers: { authtoken: t2.body.token },
    body: wrongField,
  });
  t.equal(bad.status, 400, 'the part must be named file');
  t.equal(
    (await fetch(`${d.url}/upload/files`, { method: 'POST', headers: { authtoken: 'upl_nope' }, body: wrongField }))
      .status,
    401,
  );

  const noScope = await installPlatformApp(d, { name: 'no-files' });
  const denied = await noScope.bot.getUploadToken('a.txt', 1);
  t.equal(denied.status, 403);
  t.match(denied.body, { code: 'missing_scope', message: /files:write/ });
  const denied2 = await noScope.bot.completeFileUpload({ original: { requestedFileUploadId: 'file_x' }, thumbs: [] });
  t.equal(denied2.status, 403);
  t.equal(denied2.body.code, 'missing_scope');
});

t.test('files survive a restart; an upload never completed does not', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  let d = await startTestDaemon({ dataDir });
  const { bot, app, tokens } = await installPlatformApp(d, { userScopes: WITH_FILES, botScopes: WITH_FILES });
  const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
  const file = await sdkUploadFile(bot, Buffer.from('kept across restarts'), 'notes.txt', 'text/plain');
  const posted = await bot.postMessageToChannel(general, 'notes', { files: [file.body.id] });
  const tok = await bot.getUploadToken('half.txt', 4);
  const half = await bot.postUpload(tok.body, Buffer.from('half'), 'half.txt');
  t.equal(half.status, 200);
  t.equal(blobsIn(dataDir).length, 2);
  await d.stop();

  d = await startTestDaemon({ dataDir });
  t.teardown(() => d.stop());
  const again = platformClient(d.url, must(tokens.botToken), app.appKey);
  const m = await again.fetchMessage(posted.body.id, general);
  t.match(m.body.files, [{ id: file.body.id, name: 'notes.txt', path: `${d.url}/files/${file.body.id}` }]);
  const res = await again.fetchFile(m.body.files[0].path);
  t.equal(res.status, 200);
  t.equal(await res.text(), 'kept across restarts');
  t.equal(
    (await again.completeFileUpload(half.body)).status,
    404,
    'an upload not completed before the restart is gone',
  );
  t.same(
    await until(
      () => blobsIn(dataDir),
      (b) => b.length === 1,
    ),
    [file.body.id],
    'and so are its bytes',
  );
});
