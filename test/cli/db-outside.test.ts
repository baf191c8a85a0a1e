/**
 * Issue 22 §4: `db import` and `db export` carry what the embedded store keeps outside its data
 * file too, the delivery log and uploaded files' bytes, verify them, and print the count per kind;
 * `db import` from a data directory a daemon runs on says what to do.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon, manifest, tempDir } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { startReceiver } from '../helpers/receiver.js';
import { testWithPg } from '../helpers/pg.js';

const ids = async (d: { api: (p: string) => Promise<Response>; mgmt: string }) =>
  ((await (await d.api(`${d.mgmt}/deliveries?limit=100`)).json()) as Array<{ id: string; state: string }>)
    .map((x) => `${x.id} ${x.state}`)
    .sort();

testWithPg(t, 'the delivery log and the files go to the database and back', async (t, url) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const source = tempDir();
  const d = await startTestDaemon({ dataDir: source });
  const app = (await (
    await d.api(`${d.mgmt}/apps`, {
      method: 'POST',
      json: manifest({
        slashCommands: [{ command: '/a', url: `${rx.url}/slash` }],
        eventSubscriptions: { url: `${rx.url}/events`, events: ['NEW_MESSAGE'] },
      }),
    })
  ).json()) as { id: string };
  const g = ['--url', d.url, '--token', d.token];
  rx.on('/slash', { json: { message: 'ok' } });
  rx.on('/events', { status: 410 });
  for (let i = 0; i < 3; i++) await runMain([...g, 'deliver-test', app.id, '--kind', 'slash-command']);
  await runMain([...g, 'deliver-test', app.id, '--kind', 'event']);
  const before = await ids(d);
  t.equal(before.length, 4);

  // While the daemon runs on it, the import says what to do.
  const busy = await runMain(['db', 'import', '--from', source, '--database-url', url]);
  t.equal(busy.code, 8);
  t.match(
    busy.stderr,
    new RegExp(
      `^appreg: a daemon \\(pid ${process.pid}\\) is running on ${source.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: stop it first \\(Ctrl-C in its terminal\\), then run appreg db import again`,
    ),
  );
  t.notMatch(busy.stderr, /--data-dir/);
  await d.stop();

  // An uploaded file's bytes, larger than one chunk of the database's.
  const bytes = Buffer.alloc(250 * 1024, 7);
  fs.mkdirSync(path.join(source, 'files'), { recursive: true });
  fs.writeFileSync(path.join(source, 'files', 'file_one'), bytes);

  const imp = await runMain(['db', 'import', '--from', source, '--database-url', url]);
  t.equal(imp.code, 0, imp.stderr);
  t.match(imp.stdout, /^deliveryLog \(the delivery log\)\s+4\s/m, 'the count per kind');
  t.match(imp.stdout, /^fileBlobs \(uploaded files\)\s+1\s/m);
  t.match(imp.stdout, /^fileBlobChunks \(their bytes, in chunks\)\s+2\s/m);

  // A daemon on the database (with the data dir's key) shows the same deliveries.
  const pgDir = tempDir();
  fs.copyFileSync(path.join(source, 'secret.key'), path.join(pgDir, 'secret.key'));
  const onPg = await startTestDaemon({ dataDir: pgDir, config: { databaseUrl: url } });
  t.same(await ids(onPg), before, 'the database holds the same deliveries');
  await onPg.stop();

  const target = path.join(tempDir(), 'exported');
  const exp = await runMain(['db', 'export', '--to', target, '--database-url', url, '--json']);
  t.equal(exp.code, 0, exp.stderr);
  const tables = Object.fromEntries(
    (JSON.parse(exp.stdout).tables as Array<{ table: string; records: number }>).map((x) => [x.table, x.records]),
  );
  t.match(tables, { deliveryLog: 4, fileBlobs: 1, fileBlobChunks: 2 });
  t.same(fs.readFileSync(path.join(target, 'files', 'file_one')), bytes, "the file's bytes");
  t.equal(fs.statSync(path.join(target, 'deliveries', 'log-00000001.jsonl')).mode & 0o777, 0o600);
  fs.copyFileSync(path.join(source, 'secret.key'), path.join(target, 'secret.key'));
  const back = await startTestDaemon({ dataDir: target });
  t.teardown(() => back.stop());
  t.same(await ids(back), before, 'the exported data dir shows the same deliveries, in the same states');
});
