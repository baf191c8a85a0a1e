/**
 * Issue 22 §4: `apps create` twice with one manifest warns, naming the app already there; `apps
 * sync --file` creates the app of the manifest's name or updates it, says which, and can be run
 * again and again (scripts, CI).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon, manifest, tempDir } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { must } from '../../src/must.js';

t.test(
  'apps create warns about a second app of the same name; apps sync --file creates or updates by name',
  async (t) => {
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const work = tempDir('appreg-sync-');
    const g = ['--url', d.url, '--token', d.token];
    const file = path.join(work, 'manifest.json');
    fs.writeFileSync(file, JSON.stringify(manifest({ name: 'standup' })));
    const list = async () =>
      JSON.parse((await runMain([...g, 'apps', 'list', '--json'])).stdout) as Array<{
        id: string;
        name: string;
        displayName: string;
      }>;

    await t.test('sync with no app of that name creates it, prints its secrets and writes the env file', async (t) => {
      const env = path.join(work, '.env');
      const r = await runMain([...g, 'apps', 'sync', '--file', file, '--env-out', env]);
      t.equal(r.code, 0, r.stderr);
      t.match(r.stdout, /^created app_\S+ \(standup\)\n/);
      t.match(r.stdout, /signingSecret\s+ass_/);
      t.match(fs.readFileSync(env, 'utf8'), /^PUMBLE_APP_SIGNING_SECRET=ass_/m);
      t.equal((await list()).length, 1);
    });

    await t.test('sync again updates that app, says so, and creates nothing', async (t) => {
      const [before] = await list();
      fs.writeFileSync(file, JSON.stringify(manifest({ name: 'standup', displayName: 'Standup v2' })));
      const r = await runMain([...g, 'apps', 'sync', '--file', file, '--json']);
      t.equal(r.code, 0, r.stderr);
      t.match(JSON.parse(r.stdout), { action: 'updated', id: must(before).id, displayName: 'Standup v2' });
      t.notMatch(r.stdout, /secret/i, 'an update shows no secret');
      const human = await runMain([...g, 'apps', 'sync', '--file', file]);
      t.match(
        human.stdout,
        new RegExp(`^updated ${must(before).id} \\(standup\\) from ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\n`),
      );
      t.same(
        (await list()).map((a) => [a.id, a.displayName]),
        [[must(before).id, 'Standup v2']],
      );
    });

    await t.test('apps create with the same name again: created, with a warning naming the existing app', async (t) => {
      const [first] = await list();
      const r = await runMain([...g, 'apps', 'create', '--file', file, '--json']);
      t.equal(r.code, 0, r.stderr);
      const second = JSON.parse(r.stdout) as { id: string };
      t.not(second.id, must(first).id);
      t.match(
        r.stderr,
        `warning: you already had an app named "standup": ${must(first).id}; ${second.id} is another one (appreg apps sync --file ${file} updates an existing app instead)`,
      );
      const other = path.join(work, 'other.json');
      fs.writeFileSync(other, JSON.stringify(manifest({ name: 'other' })));
      const quiet = await runMain([...g, 'apps', 'create', '--file', other]);
      t.equal(quiet.stderr, '', 'no warning for a name of its own');
    });

    await t.test(
      'with two apps of the name, sync refuses to guess and names both; given an id it updates that one',
      async (t) => {
        const both = (await list()).filter((a) => a.name === 'standup');
        const r = await runMain([...g, 'apps', 'sync', '--file', file]);
        t.equal(r.code, 2);
        t.match(
          r.stderr,
          `you have 2 apps named "standup" (${both.map((a) => a.id).join(', ')}): give the one to update`,
        );
        const one = await runMain([...g, 'apps', 'sync', must(both[1]).id, '--file', file, '--json']);
        t.equal(one.code, 0, one.stderr);
        t.match(JSON.parse(one.stdout), { action: 'updated', id: must(both[1]).id });
      },
    );

    await t.test('--from-url needs the app id; --file and --from-url are one or the other', async (t) => {
      const r = await runMain([...g, 'apps', 'sync', '--from-url', 'http://127.0.0.1:9']);
      t.equal(r.code, 2);
      t.match(r.stderr, /--from-url updates an app: give its id/);
      const none = await runMain([...g, 'apps', 'sync']);
      t.equal(none.code, 2);
      t.match(none.stderr, /--file <manifest.json> or --from-url/);
    });
  },
);
