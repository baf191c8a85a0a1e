/**
 * Scheduled messages: kept until their time, posted by the daemon as their author, also when the
 * time passed while it was stopped. The daemons run on a test clock: a test advances it to a
 * message's time (every poll of that span done when the advance resolves), or sets it later.
 */
import fs from 'node:fs';
import t from 'tap';
import { startTestDaemon, tempDir } from '../helpers/daemon.js';
import { startReceiver } from '../helpers/receiver.js';
import { secondUser } from '../fixtures/redirects-flow.js';
import { installPlatformApp, platformClient, PLATFORM_SCOPES, sdkUploadFile } from '../helpers/platform-client.js';
import { until as untilHolds } from '../helpers/until.js';
import { createTestClock, type TestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

/** What `f` gives once it gives something (what the daemon does once a poll leased a message: I/O only). */
async function until<T>(f: () => Promise<T | undefined>): Promise<T> {
  const v = await untilHolds(f, (x) => x !== undefined);
  if (v === undefined) throw new Error('timed out');
  return v;
}

/** Let the daemon's clock jump to `at`, and a second pass: the backed-off polls (a second apart at most) run in it. */
async function jumpTo(clock: TestClock, at: number) {
  clock.set(at);
  await clock.advance(1000);
}

/** A daemon on a test clock with a platform app installed in it: the app's bot and the id of #general. */
async function botOnTestClock(t: Tap.Test) {
  const clock = createTestClock();
  const now = clock.now();
  const d = await startTestDaemon({ clock });
  t.teardown(() => d.stop());
  const { bot } = await installPlatformApp(d);
  const general: string = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
  return { clock, now, d, bot, general };
}

t.test('create, list, get, edit, delete; only the author sees them; posted at their time', async (t) => {
  const clock = createTestClock();
  const now = clock.now();
  const d = await startTestDaemon({ clock });
  t.teardown(() => d.stop());
  const other = await secondUser(d);
  const { bot, tokens } = await installPlatformApp(d);
  const { user: otherClient } = await installPlatformApp(d, { as: other });
  const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;

  const a = await bot.createScheduledMessage({ channelId: general, text: 'stand-up in 5', sendAt: now + 60_000 });
  t.equal(a.status, 200);
  t.match(a.body, {
    workspaceId: d.workspaceId,
    author: tokens.botId,
    channelId: general,
    text: 'stand-up in 5',
    sentAt: now + 60_000,
    files: [],
    attachments: [],
  });
  const b = await bot.createScheduledMessage({ channelId: general, text: 'never sent', sendAt: now + 30_000 });
  t.equal(
    (await bot.createScheduledMessage({ channelId: general, text: 'past', sendAt: now - 1 })).status,
    400,
    'sendAt must be in the future',
  );
  t.same(
    (await bot.fetchScheduledMessages()).body.scheduledMessages.map((s: any) => s.text),
    ['never sent', 'stand-up in 5'],
    'soonest first',
  );
  t.equal((await otherClient.fetchScheduledMessage(a.body.id)).status, 404, 'another user does not see it');
  t.same((await otherClient.fetchScheduledMessages()).body, { scheduledMessages: [], hasMore: false });
  const edited = await bot.editScheduledMessage(a.body.id, {
    channelId: general,
    text: 'stand-up now',
    sendAt: now + 60_000,
  });
  t.equal(edited.body.text, 'stand-up now');
  t.same((await bot.editScheduledMessageAttachments(a.body.id, [{ title: 'Agenda' }])).body.attachments, [
    { title: 'Agenda' },
  ]);
  t.equal((await bot.deleteScheduledMessage(b.body.id)).status, 204);
  t.equal((await bot.fetchScheduledMessage(b.body.id)).status, 404);

  const postedNow = async () =>
    (await bot.fetchMessages(general, undefined, 10)).body.messages.find((m: any) => m.text === 'stand-up now');
  await clock.advance(60_000 - 1);
  t.equal(
    (await bot.fetchScheduledMessage(a.body.id)).status,
    200,
    'a millisecond before its time: still waiting (not leased by a poll)',
  );
  t.notOk(await postedNow(), 'and not posted');
  await clock.advance(50); // its time (a wake is kept to a 50 ms grain)
  const posted = await until(postedNow);
  t.match(posted, { author: tokens.botId, attachments: [{ title: 'Agenda' }] });
  t.same((await bot.fetchScheduledMessages()).body.scheduledMessages, [], 'no longer pending');
  t.notOk(
    (await bot.fetchMessages(general, undefined, 10)).body.messages.some((m: any) => m.text === 'never sent'),
    'the deleted one was never posted',
  );
});

t.test(
  'a scheduled message whose time passed while the daemon was stopped is posted on start, with its NEW_MESSAGE',
  async (t) => {
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    rx.on('/events', { text: 'ok' });
    const dataDir = tempDir();
    t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const clock = createTestClock();
    let d = await startTestDaemon({ dataDir, clock });
    const { bot, app, tokens } = await installPlatformApp(d, {
      events: ['NEW_MESSAGE'],
      eventsUrl: `${rx.url}/events`,
    });
    rx.secret = app.signingSecret;
    const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
    const s = await bot.createScheduledMessage({
      channelId: general,
      text: 'posted after the restart',
      sendAt: clock.now() + 3_600_000,
    });
    t.equal(s.status, 200);
    await d.stop();
    clock.set(clock.now() + 3_601_000); // while no daemon runs
    d = await startTestDaemon({ dataDir, clock });
    t.teardown(() => d.stop());
    const again = platformClient(d.url, must(tokens.botToken), app.appKey);
    const m = await until(async () =>
      (await again.fetchMessages(general, undefined, 10)).body.messages.find(
        (x: any) => x.text === 'posted after the restart',
      ),
    );
    t.equal(m.author, tokens.botId);
    const [ev] = await rx.waitFor(1);
    t.match(JSON.parse(must(ev).body.body), {
      mId: m.id,
      tx: 'posted after the restart',
      aId: tokens.botId,
      ty: 'NEW_MESSAGE',
    });
    t.same((await again.fetchScheduledMessages()).body.scheduledMessages, []);
  },
);

t.test('limit: the soonest `limit` of them, and hasMore', async (t) => {
  const { now, bot, general } = await botOnTestClock(t);
  for (const [i, text] of ['third', 'first', 'second'].entries())
    await bot.createScheduledMessage({ channelId: general, text, sendAt: now + must([30, 10, 20][i]) * 60_000 });
  const one = await bot.fetchScheduledMessages(undefined, 1);
  t.equal(one.status, 200);
  t.same(
    one.body.scheduledMessages.map((s: any) => s.text),
    ['first'],
  );
  t.equal(one.body.hasMore, true);
  const all = await bot.fetchScheduledMessages(undefined, 3);
  t.same(
    all.body.scheduledMessages.map((s: any) => s.text),
    ['first', 'second', 'third'],
  );
  t.equal(all.body.hasMore, false);
  t.equal((await bot.fetchScheduledMessages()).body.scheduledMessages.length, 3, 'without limit: up to 100');
  for (const bad of [0, 101, 'x'])
    t.match(
      (await bot.fetchScheduledMessages(undefined, bad as number)).body,
      { code: 'invalid_request', details: [{ pointer: '/limit' }] },
      `limit=${bad}`,
    );
});

t.test(
  'a recurring message (as the SDK sends it) is posted at each occurrence until its end, and shows its recurrence',
  async (t) => {
    const clock = createTestClock(Date.parse('2026-03-06T09:00:00.000Z')); // a Friday
    const d = await startTestDaemon({ clock });
    t.teardown(() => d.stop());
    const { bot } = await installPlatformApp(d);
    const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
    const sendAt = clock.now() + 3_600_000;
    const made = await bot.createScheduledMessage({
      channelId: general,
      text: 'daily digest',
      sendAt,
      recurrence: { recurrenceType: 'BUSINESSDAYS', endAfterOccurrences: 2 },
    });
    t.equal(made.status, 200, JSON.stringify(made.body));
    t.same(
      made.body.recurrence,
      { recurrenceType: 'BUSINESSDAYS', endAfterOccurrences: 2, endDate: 0 },
      'V1.ScheduledMessageRecurrence: both ends numbers',
    );
    t.equal(made.body.sentAt, sendAt);
    const posts = async () =>
      (await bot.fetchMessages(general, undefined, 20)).body.messages.filter((m: any) => m.text === 'daily digest');
    await jumpTo(clock, sendAt);
    await until(async () => ((await posts()).length === 1 ? true : undefined));
    // moved on to its next occurrence (while it is being posted its author does not see it: 404)
    const movedOn = async () => {
      const s = await bot.fetchScheduledMessage(made.body.id);
      return s.status === 200 && s.body.sentAt !== sendAt ? s.body : undefined;
    };
    const next = await until(movedOn);
    t.equal(
      new Date(next.sentAt).toISOString(),
      '2026-03-09T10:00:00.000Z',
      'the next business day (Monday), same time',
    );
    t.same(next.recurrence, made.body.recurrence);
    await jumpTo(clock, next.sentAt);
    await until(async () => ((await posts()).length === 2 ? true : undefined));
    await until(async () => ((await bot.fetchScheduledMessage(made.body.id)).status === 404 ? true : undefined));
    t.same((await bot.fetchScheduledMessages()).body.scheduledMessages, [], 'two occurrences, then it ends');
    const bad = await bot.createScheduledMessage({
      channelId: general,
      text: 'x',
      sendAt: clock.now() + 1000,
      recurrence: { recurrenceType: 'HOURLY' },
    });
    t.equal(bad.status, 400);
    t.match(bad.body, { code: 'invalid_request', details: [{ pointer: '/recurrence/recurrenceType' }] });
  },
);

t.test('occurrences that went by while no daemon posted are skipped, not posted in a burst', async (t) => {
  const clock = createTestClock(Date.parse('2026-03-06T09:00:00.000Z'));
  const d = await startTestDaemon({ clock });
  t.teardown(() => d.stop());
  const { bot } = await installPlatformApp(d);
  const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
  const sendAt = clock.now() + 60_000;
  const made = await bot.createScheduledMessage({
    channelId: general,
    text: 'every day',
    sendAt,
    recurrence: { recurrenceType: 'DAILY' },
  });
  await jumpTo(clock, sendAt + 3.5 * 86_400_000);
  const next = await until(async () => {
    const s = await bot.fetchScheduledMessage(made.body.id);
    return s.status === 200 && s.body.sentAt !== sendAt ? s.body : undefined;
  });
  t.equal(next.sentAt, sendAt + 4 * 86_400_000, 'the next occurrence still to come');
  t.equal(
    (await bot.fetchMessages(general, undefined, 20)).body.messages.filter((m: any) => m.text === 'every day').length,
    1,
    'posted once',
  );
});

t.test(
  "a post slower than a poll is posted once: the daemon's own poll renewing its lease meanwhile is no rival",
  async (t) => {
    const { clock, now, d, bot, general } = await botOnTestClock(t);
    await bot.createScheduledMessage({ channelId: general, text: 'slow to post', sendAt: now + 60_000 });

    // The post's commit (the message, and the schedule as leased) waits until the test lets it go: a post slower
    // than a poll, each time it is made.
    const store = d.parts.store;
    const commit = store.commit.bind(store);
    let holding = true;
    let held: (() => void) | undefined;
    let posts = 0;
    store.commit = async (changes, expect) => {
      if (holding && changes.some((c) => c.table === 'wsScheduledMessages') && expect?.length) {
        posts++;
        await new Promise<void>((r) => (held = r));
      }
      return commit(changes, expect);
    };
    t.teardown(() => void (store.commit = commit));
    const heldAgain = async () => must(await untilHolds(() => held));

    await clock.advance(60_000 + 50); // its time: a poll leases it and the post begins
    for (let round = 0; round < 3; round++) {
      const release = await heldAgain();
      held = undefined;
      if (round === 2) holding = false;
      await clock.advance(250); // the next poll renews the lease of the post under way
      release(); // which then meets the renewal, and is made again with the record as it is now
    }
    const posted = async () =>
      (await bot.fetchMessages(general, undefined, 10)).body.messages.filter((m: any) => m.text === 'slow to post');
    const once = await untilHolds(posted, (list) => list.length > 0);
    t.equal(once.length, 1, 'posted once');
    t.equal(posts, 3, 'each post met a renewal, and was made again');
    t.same((await bot.fetchScheduledMessages()).body.scheduledMessages, [], 'no longer pending');
  },
);

t.test(
  'files on a scheduled message, as the SDK sends them (ids of uploaded files): kept, shown, edits keep them, posted with it',
  async (t) => {
    const clock = createTestClock();
    const now = clock.now();
    const d = await startTestDaemon({ clock });
    t.teardown(() => d.stop());
    const scopes = [...PLATFORM_SCOPES, 'files:write'];
    const { bot, user, tokens } = await installPlatformApp(d, { userScopes: scopes, botScopes: scopes });
    const general: string = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
    const upload = async (c: typeof bot, name: string) => {
      const f = await sdkUploadFile(c, Buffer.from(`bytes of ${name}`), name, 'text/plain');
      t.equal(f.status, 200, `uploaded ${name}`);
      return f.body.id as string;
    };
    const botFile = await upload(bot, 'agenda.txt');
    const userFile = await upload(user, 'minutes.txt');

    // createScheduledMessage uploads request.files first, then sends {...request, files: [ids]}
    const made = await bot.createScheduledMessage({
      channelId: general,
      text: 'agenda attached',
      sendAt: now + 60_000,
      files: [botFile],
    });
    t.equal(made.status, 200, JSON.stringify(made.body));
    t.match(made.body.files, [
      {
        id: botFile,
        owner: tokens.botId,
        name: 'agenda.txt',
        mimeType: 'text/plain',
        path: `${d.url}/files/${botFile}`,
      },
    ]);
    t.same((await bot.fetchScheduledMessage(made.body.id)).body.files, made.body.files, 'GET shows them');
    t.same((await bot.fetchScheduledMessages()).body.scheduledMessages[0].files, made.body.files, 'the list too');
    const edited = await bot.editScheduledMessage(made.body.id, {
      channelId: general,
      text: 'agenda attached (edited)',
      sendAt: now + 60_000,
      files: [], // what the SDK's editScheduledMessage always sends
    });
    t.equal(edited.status, 200);
    t.same(edited.body.files, made.body.files, 'an edit naming no files keeps them');
    const other = await bot.createScheduledMessage({
      channelId: general,
      text: 'y',
      sendAt: now + 90_000,
      files: [botFile],
    });
    const second = await upload(bot, 'second.txt');
    const replaced = await bot.editScheduledMessage(other.body.id, {
      channelId: general,
      text: 'y',
      sendAt: now + 90_000,
      files: [second],
    });
    t.match(replaced.body.files, [{ id: second, name: 'second.txt' }], 'one naming files replaces them');
    t.equal(replaced.body.files.length, 1);
    t.equal((await bot.deleteScheduledMessage(other.body.id)).status, 204);

    const onlyFiles = await user.createScheduledMessage({
      channelId: general,
      text: '',
      sendAt: now + 60_000,
      files: [userFile],
      recurrence: { recurrenceType: 'DAILY', endAfterOccurrences: 2 },
    });
    t.equal(onlyFiles.status, 200, 'as a user, and a message of files alone');
    t.match(onlyFiles.body.files, [{ id: userFile, owner: d.workspaceUserId }]);

    const notMine = await user.createScheduledMessage({
      channelId: general,
      text: 'x',
      sendAt: now + 60_000,
      files: [botFile],
    });
    t.equal(notMine.status, 400, 'a file of someone else');
    t.match(notMine.body, { code: 'invalid_request', details: [{ pointer: '/files/0' }] });
    const unknown = await bot.createScheduledMessage({
      channelId: general,
      text: 'x',
      sendAt: now + 60_000,
      files: ['file_nope'],
    });
    t.equal(unknown.status, 400, 'an unknown file');
    t.equal((await bot.fetchScheduledMessages()).body.scheduledMessages.length, 1, 'refused ones are not kept');

    await clock.advance(60_000 + 50);
    const posted = await until(async () => {
      const ms = (await bot.fetchMessages(general, undefined, 10)).body.messages;
      const a = ms.find((m: any) => m.text === 'agenda attached (edited)');
      const b = ms.find((m: any) => m.author === d.workspaceUserId && m.files.length);
      return a && b ? { a, b } : undefined;
    });
    t.same(posted.a.files, made.body.files, 'posted with its file');
    t.match(posted.b.files, [{ id: userFile, name: 'minutes.txt' }]);
    const bytes = await bot.fetchFile(posted.a.files[0].path);
    t.equal(await bytes.text(), 'bytes of agenda.txt', 'and the file reads back');

    // the recurring one keeps its files for its next occurrence, and posts them again
    const next = await until(async () => {
      const s = await user.fetchScheduledMessage(onlyFiles.body.id);
      return s.status === 200 && s.body.sentAt !== now + 60_000 ? s.body : undefined;
    });
    t.same(next.files, onlyFiles.body.files, 'its next occurrence still carries the file');
    await jumpTo(clock, next.sentAt);
    const twice = await untilHolds(
      async () =>
        (await bot.fetchMessages(general, undefined, 20)).body.messages.filter(
          (m: any) => m.author === d.workspaceUserId && m.files.some((f: any) => f.id === userFile),
        ),
      (ms) => ms.length === 2,
    );
    t.equal(twice.length, 2, 'posted with the file at both occurrences');
  },
);
