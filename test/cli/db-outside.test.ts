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
import { sqlAt, testWithPg } from '../helpers/pg.js';

const ids = async (d: { api: (p: string) => Promise<Response>; mgmt: string }) =>
  ((await (await d.api(`${d.mgmt}/deliveries?limit=100`)).json()) as Array<{ id: string; state: string }>)
    .map((x) => `${x.id} ${x.state}`)
    .sort();

/** A db import or export table's rows: name (kind) and records (not the digest: order numbers are each copy's own). */
const rows = (stdout: string) =>
  stdout
    .split('\n')
    .map((l) => /^(\w+(?: \([^)]*\))?)\s+(\d+)\s+([0-9a-f]{16})$/.exec(l.trimEnd()))
    .flatMap((m) => (m ? [`${m[1]} ${m[2]}`] : []));

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

  // Exported at once, the same tables and counts in the same words (issue 34: "153 records in 18 tables" after an
  // import of "341 in 20": the export counted deliveries, the import their records, attempts and states apart).
  const exportedAtOnce = await runMain(['db', 'export', '--to', tempDir(), '--database-url', url]);
  t.equal(exportedAtOnce.code, 0, exportedAtOnce.stderr);
  t.same(rows(exportedAtOnce.stdout), rows(imp.stdout), 'the export lists the tables and counts the import did');
  t.ok(
    rows(imp.stdout).some((r) => r === 'deliveryAttempts (its attempts) 4'),
    'the attempts counted apart',
  );
  t.equal(
    /(\d+ records in \d+ tables)/.exec(exportedAtOnce.stdout)?.[1],
    /(\d+ records in \d+ tables)/.exec(imp.stdout)?.[1],
    'and the same total',
  );
  // A record of the log that belongs to no delivery (an attempt whose delivery is gone) is not copied: it says so.
  const orphan = { id: 'att_orphan', deliveryId: 'dlv_gone', seq: 0, attempt: {} };
  const row = `INSERT INTO appreg_records (tbl, id, data) VALUES ('deliveryAttempts', $1, $2)`;
  await sqlAt(url, row, [orphan.id, JSON.stringify(orphan)]);
  const withOrphan = await runMain(['db', 'export', '--to', tempDir(), '--database-url', url]);
  t.equal(withOrphan.code, 0, withOrphan.stderr);
  t.match(
    withOrphan.stdout,
    /Not copied: 1 of deliveryAttempts \(records of the delivery log that belong to no delivery\)/,
  );
  t.same(rows(withOrphan.stdout), rows(exportedAtOnce.stdout), 'the copy is the one without it');
  await sqlAt(url, `DELETE FROM appreg_records WHERE tbl = 'deliveryAttempts' AND id = $1`, [orphan.id]);

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
