/**
 * Issue 37: a recording's events as a suite (src/apptest/recorder/suite-of.ts), event lists in, YAML out: actions and
 * expectations, `as:` for the second person, references in place of ids, values that vary never written, the editor's
 * drops and loosenings, and what cannot be recorded said.
 */
import t from 'tap';
import { suiteOf } from '../../src/apptest/recorder/suite-of.js';
import { suiteYaml } from '../../src/apptest/recorder/suite-yaml.js';
import { loosen, stableText } from '../../src/apptest/recorder/stable-text.js';
import type { RecordedEvent, Recording, SeenMessage } from '../../src/recording-events.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadSuite } from '../../src/apptest/suite.js';
import { IN_THE_MODAL } from '../helpers/planner.js';

/** The problems `appreg test` finds reading this suite beside the example app's manifest: none, or its message. */
async function validateSuite(suite: unknown, name: string): Promise<string[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-recorder-'));
  try {
    fs.copyFileSync('examples/standup-app/manifest.json', path.join(dir, 'manifest.json'));
    const file = path.join(dir, name);
    fs.writeFileSync(file, typeof suite === 'string' ? suite : JSON.stringify(suite));
    await loadSuite(file);
    return [];
  } catch (e) {
    return [(e as Error).message];
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const APP = 'app_standup1';
const people = [
  { id: 'usr_owner0001', name: 'Owner', owner: true },
  { id: 'usr_dev000001', name: 'Dev', owner: false },
  { id: 'usr_bot000001', name: 'Standup', owner: false, bot: true },
];
const CH = 'chn_general01';
const plain = (text: string) => ({ type: 'plain_text', text });
const standupBlocks = (text: string) => [
  { type: 'section', text: plain(text) },
  {
    type: 'actions',
    elements: [
      { type: 'button', onAction: 'standup_join', value: 'join', text: plain('Join') },
      { type: 'button', onAction: 'standup_skip', value: 'skip', text: plain('Skip') },
    ],
  },
];
const msg = (id: string, text: string, extra: Partial<SeenMessage> = {}): SeenMessage => ({
  id,
  channelId: CH,
  author: 'usr_bot000001',
  appId: APP,
  text,
  blocks: standupBlocks(text),
  ...extra,
});
let n = 0;
const call = (
  kind: string,
  user: string,
  payload: Record<string, unknown>,
  more: Record<string, unknown> = {},
): RecordedEvent => ({
  type: 'call',
  call: {
    id: `dlv_${++n}aaaaaa`,
    kind,
    appId: APP,
    user,
    payload: { channelId: CH, ...payload },
    outcome: 'acked',
    response: {},
    ...more,
  },
});
const click = (user: string, onAction: string, value: string, messageId = 'msg_standup01') =>
  call('block-interaction', user, {
    sourceType: 'MESSAGE',
    sourceId: messageId,
    actionType: 'BUTTON',
    onAction,
    payload: JSON.stringify({ value }),
  });

/** The standup conversation of examples/standup-app, two people. */
const standup: Recording = {
  people,
  apps: [{ id: APP, name: 'Standup' }],
  events: [
    call('slash-command', 'usr_owner0001', { slashCommand: '/standup', text: 'Sprint 13' }),
    { type: 'message', message: msg('msg_standup01', 'Sprint 13: joined nobody yet; skipped nobody yet') },
    click('usr_owner0001', 'standup_join', 'join'),
    { type: 'message-changed', message: msg('msg_standup01', 'Sprint 13: joined Owner; skipped nobody yet') },
    click('usr_dev000001', 'standup_skip', 'skip'),
    { type: 'message-changed', message: msg('msg_standup01', 'Sprint 13: joined Owner; skipped Dev') },
  ],
};

t.test('the standup conversation with two people reads like the hand-written suite', async (t) => {
  const r = suiteOf(standup);
  t.same(r.notes, [], 'nothing left out');
  t.equal(r.appId, APP);
  t.same(r.suite, {
    name: 'Standup',
    users: { dev: { name: 'Dev' } },
    install: { users: ['owner', 'dev'] },
    tests: [
      {
        name: 'recorded: say /standup Sprint 13, click Join, click Skip',
        steps: [
          { say: '/standup Sprint 13' },
          { expect: 'ack' },
          {
            expect: 'message',
            text: 'Sprint 13: joined nobody yet; skipped nobody yet',
            buttons: ['Join', 'Skip'],
            save: 'standup',
          },
          { click: 'Join', message: '${standup}' },
          { expect: 'ack' },
          { expect: 'updated', text: 'Sprint 13: joined Owner; skipped nobody yet', buttons: ['Join', 'Skip'] },
          { click: 'Skip', message: '${standup}', as: 'dev' },
          { expect: 'ack' },
          { expect: 'updated', text: 'Sprint 13: joined Owner; skipped Dev', buttons: ['Join', 'Skip'] },
        ],
      },
    ],
  });
  const yaml = suiteYaml({ ...r.suite, app: { manifest: 'manifest.json', start: { command: 'node app.mjs' } } });
  t.match(yaml, /^# yaml-language-server: \$schema=/, 'the schema line first');
  t.match(yaml, /buttons: \[ Join, Skip \]/, 'short lists on one line');
  t.match(yaml, /dev: \{ name: Dev \}/);
  t.match(yaml, /message: \$\{standup\}/);
  const problems = await validateSuite(yaml, 'recorded.apptest.yaml');
  t.same(problems, [], 'the YAML is a valid suite');
});

t.test('the editor: a test renamed, a step dropped, a text loosened', async (t) => {
  const r = suiteOf(standup, { testName: 'Join and Skip', suiteName: 'Mine', drop: [1, 4], loose: [2, 8] });
  const steps = r.suite.tests[0]?.steps as Array<Record<string, unknown>>;
  t.equal(r.suite.name, 'Mine');
  t.equal(r.suite.tests[0]?.name, 'Join and Skip');
  t.equal(steps.length, 7, 'two steps dropped');
  t.same(
    steps[1],
    { expect: 'message', text: 'Sprint 13', buttons: ['Join', 'Skip'], save: 'standup' },
    'loosened to its first clause',
  );
  t.same(steps[6]?.text, 'Sprint 13');
  t.equal(r.steps.length, 9, 'the editor still lists every step generated');
});

t.test('a step that saved a message is dropped: the references to it go too', async (t) => {
  const r = suiteOf(standup, { drop: [2] });
  const steps = r.suite.tests[0]?.steps as Array<Record<string, unknown>>;
  t.same(steps[2], { click: 'Join' }, 'the click names no message: the newest with that button');
});

t.test('ids, times and dates are never written; the owner is named as the run names it', async (t) => {
  t.equal(stableText('Standup msg_8f3k2j1a9x posted 10:32'), 'Standup', 'the longest fixed part');
  t.equal(stableText('Sprint 13 starts 2026-11-28'), 'Sprint 13 starts');
  t.equal(stableText('usr_12345678'), undefined, 'nothing fixed left');
  t.equal(stableText('at 127.0.0.1:38923 now, really'), 'now, really');
  t.equal(loosen('Sprint 13: joined Owner; skipped Dev'), 'Sprint 13');
  t.equal(loosen('one two three four five'), 'one two three');
  t.equal(loosen('short'), 'short');
  const rec: Recording = {
    people: [{ id: 'usr_alice0001', name: 'Alice', owner: true }],
    apps: [{ id: APP, name: 'Standup' }],
    events: [
      call('slash-command', 'usr_alice0001', { slashCommand: '/standup', text: '' }),
      { type: 'message', message: msg('msg_x0000001', 'Alice started standup std_abc123xyz at 09:15', { blocks: [] }) },
    ],
  };
  const steps = suiteOf(rec).suite.tests[0]?.steps as Array<Record<string, unknown>>;
  t.same(steps[2], { expect: 'message', text: '${users.owner.name} started standup' });
  t.same(suiteOf(rec).suite.install, { users: ['owner'] }, 'no users section for the owner alone');
  const dollar: Recording = {
    ...rec,
    events: [
      {
        type: 'message',
        message: { id: 'msg_d0000001', channelId: CH, author: 'usr_alice0001', text: 'costs ${price}', blocks: [] },
      },
    ],
  };
  t.same(suiteOf(dollar).suite.tests[0]?.steps, [{ say: 'costs $${price}' }], 'a typed ${ is written literally');
});

t.test('messages, threads, reactions, events, modals, menus', async (t) => {
  const view = {
    id: 'view_1',
    title: plain('Start standup'),
    blocks: [
      {
        type: 'input',
        blockId: 'answer',
        label: plain('What are you working on today?'),
        element: { type: 'plain_text_input', onAction: 'text' },
      },
    ],
  };
  const rec: Recording = {
    people,
    apps: [
      { id: APP, name: 'Standup' },
      { id: 'app_other001', name: 'Other' },
    ],
    events: [
      {
        type: 'message',
        message: {
          id: 'msg_hello001',
          channelId: CH,
          author: 'usr_owner0001',
          text: 'good morning @standup',
          blocks: [],
        },
      },
      call('event', 'usr_owner0001', {}, { subject: 'NEW_MESSAGE' }),
      call('event', 'usr_owner0001', {}, { subject: 'NEW_MESSAGE' }),
      {
        type: 'message',
        message: msg('msg_reply001', 'Here! Type /standup', { blocks: [], threadRootId: 'msg_hello001' }),
      },
      {
        type: 'call',
        call: {
          id: 'dlv_other',
          kind: 'event',
          appId: 'app_other001',
          user: 'usr_owner0001',
          payload: {},
          subject: 'NEW_MESSAGE',
          outcome: 'acked',
        },
      },
      { type: 'reaction', user: 'usr_dev000001', messageId: 'msg_hello001', code: 'tada' },
      { type: 'reaction', user: 'usr_bot000001', messageId: 'msg_hello001', code: 'eyes' },
      call(
        'global-shortcut',
        'usr_dev000001',
        { shortcut: 'start_standup' },
        { outcome: 'response', response: { view } },
      ),
      call('view-action', 'usr_dev000001', {
        viewActionType: 'SUBMIT',
        view: {
          ...view,
          state: { values: { answer: { text: { type: 'plain_text_input', value: 'fixing the build' } } } },
        },
      }),
      { type: 'message', message: msg('msg_ans00001', "Dev's standup: fixing the build", { blocks: [] }) },
      call(
        'global-shortcut',
        'usr_owner0001',
        { shortcut: 'start_standup' },
        { outcome: 'response', response: { view } },
      ),
      { type: 'view-closed', user: 'usr_owner0001' },
      call(
        'dynamic-menu',
        'usr_owner0001',
        { onAction: 'pick_mood', query: 'goo' },
        { outcome: 'response', response: { options: [{ text: plain('Good'), value: 'good' }] } },
      ),
      { type: 'message', message: msg('msg_other01', 'elsewhere', { channelId: 'chn_other0001' }) },
    ],
  };
  const r = suiteOf(rec);
  const steps = r.suite.tests[0]?.steps;
  t.same(steps, [
    { say: 'good morning @standup', save: 'good' },
    { expect: 'event', type: 'NEW_MESSAGE' },
    { expect: 'message', text: 'Here! Type /standup', thread: '${good}' },
    { react: 'tada', message: '${good}', as: 'dev' },
    { expect: 'reaction', code: 'eyes', message: '${good}' },
    { shortcut: 'start_standup', as: 'dev' },
    { expect: 'modal', title: 'Start standup', inputs: ['What are you working on today?'] },
    { submit: { 'What are you working on today?': 'fixing the build' }, as: 'dev' },
    { expect: 'ack' },
    { expect: 'message', text: "Dev's standup: fixing the build" },
    { shortcut: 'start_standup' },
    { expect: 'modal', title: 'Start standup', inputs: ['What are you working on today?'] },
    { close: true },
    { menu: 'pick_mood', query: 'goo' },
    { expect: 'options', options: ['Good'] },
  ]);
  t.same(
    await validateSuite(
      { ...r.suite, app: { manifest: 'manifest.json', start: { command: 'node app.mjs' } } },
      'x.apptest.json',
    ),
    [],
    'valid',
  );
});

t.test('a choice in a select, a dynamic select, and what cannot be recorded', async (t) => {
  const blocks = [
    {
      type: 'actions',
      elements: [
        { type: 'static_select_menu', onAction: 'size', options: [{ text: plain('Large'), value: 'l' }] },
        { type: 'dynamic_select_menu', onAction: 'pick_mood' },
        { type: 'date_picker', onAction: 'when' },
      ],
    },
  ];
  const inMsg = (onAction: string, actionType: string, value: string) =>
    call('block-interaction', 'usr_owner0001', {
      sourceType: 'MESSAGE',
      sourceId: 'msg_sel00001',
      actionType,
      onAction,
      payload: JSON.stringify({ value }),
    });
  const rec: Recording = {
    people,
    apps: [{ id: APP, name: 'Standup' }],
    events: [
      call(
        'slash-command',
        'usr_owner0001',
        { slashCommand: '/standup', text: '' },
        { outcome: 'timeout', ephemeralMessage: 'Standup is not running' },
      ),
      { type: 'message', message: msg('msg_sel00001', 'Pick', { blocks }) },
      inMsg('size', 'STATIC_SELECT_MENU', 'l'),
      call(
        'dynamic-menu',
        'usr_owner0001',
        { onAction: 'pick_mood', query: 'gr' },
        { outcome: 'response', response: { options: [] } },
      ),
      inMsg('pick_mood', 'DYNAMIC_SELECT_MENU', 'great'),
      inMsg('when', 'DATE_PICKER', '2026-11-28'),
      call('block-interaction', 'usr_owner0001', {
        sourceType: 'VIEW',
        sourceId: 'view_home',
        view: { id: 'view_home', type: 'HOME', blocks: [] },
        actionType: 'BUTTON',
        onAction: 'refresh',
        payload: '{}',
      }),
      { type: 'message-changed', message: msg('msg_sel00001', 'Picked', { blocks }) },
    ],
  };
  const r = suiteOf(rec);
  t.same(r.suite.tests[0]?.steps, [
    { say: '/standup' },
    { expect: 'answered' },
    { expect: 'message', text: 'Pick', save: 'standup' },
    { select: 'Large', in: 'size', message: '${standup}' },
    { expect: 'ack' },
    { select: 'great', in: 'pick_mood', message: '${standup}' },
    { expect: 'ack' },
    { date: '2026-11-28', in: 'when', message: '${standup}' },
    { expect: 'ack' },
    { click: { onAction: 'refresh' }, home: true },
    { expect: 'ack' },
    { expect: 'updated', text: 'Picked' },
  ]);
  t.match(r.notes, [/did not answer \/standup while recording \(timeout\)/]);
  t.equal(r.notes.length, 1, 'the date and the home view are steps now');
});

t.test('dates, texts, the home view, and modals the app updates and pushes', async (t) => {
  const home = { id: 'view_home', type: 'HOME', blocks: [] };
  const inMsg = (onAction: string, actionType: string, chosen: Record<string, unknown>) =>
    call('block-interaction', 'usr_owner0001', {
      sourceType: 'MESSAGE',
      sourceId: 'msg_plan0001',
      actionType,
      onAction,
      payload: JSON.stringify(chosen),
    });
  const inHome = (onAction: string, actionType: string, chosen: Record<string, unknown>, more = {}) =>
    call(
      'block-interaction',
      'usr_dev000001',
      { sourceType: 'VIEW', sourceId: 'view_home', view: home, actionType, onAction, payload: JSON.stringify(chosen) },
      more,
    );
  const modal = (id: string, title: string, inputs: Array<[string, string, string]>, buttons: string[] = []) => ({
    id,
    type: 'MODAL',
    callbackId: id,
    title: plain(title),
    blocks: [
      ...inputs.map(([blockId, label, type]) => ({
        type: 'input',
        blockId,
        label: plain(label),
        element: { type, onAction: `${blockId}_input` },
      })),
      {
        type: 'actions',
        elements: buttons.map((b) => ({ type: 'button', onAction: b.toLowerCase(), value: b, text: plain(b) })),
      },
    ],
  });
  const details = modal(
    'view_details',
    'Plan details',
    [
      ['title', 'Title', 'plain_text_input'],
      ['due', 'Due', 'date_picker'],
    ],
    ['More', 'Rename'],
  );
  const renamed = { ...details, title: plain('Plan details, renamed') };
  const more = modal('view_more', 'More', [['extra', 'Owner note', 'plain_text_input']]);
  const answered = (view: object, action: string) => ({
    outcome: 'response',
    response: { triggerId: 't', view, viewType: 'NATIVE', action },
  });
  const inModal = (view: object, onAction: string, more: Record<string, unknown>) =>
    call(
      'block-interaction',
      'usr_owner0001',
      { sourceType: 'VIEW', sourceId: 'view_details', view, actionType: 'BUTTON', onAction, payload: '{}' },
      more,
    );
  const submitOf = (view: object, values: Record<string, unknown>) =>
    call('view-action', 'usr_owner0001', { viewActionType: 'SUBMIT', view: { ...view, state: { values } } });
  const planBlocks = [
    {
      type: 'actions',
      elements: [
        { type: 'date_picker', onAction: 'due' },
        { type: 'date_range_picker', onAction: 'trip' },
        { type: 'plain_text_input', onAction: 'note' },
        { type: 'button', onAction: 'details', value: 'd', text: plain('Details') },
      ],
    },
  ];
  const rec: Recording = {
    people,
    apps: [{ id: APP, name: 'Planner' }],
    events: [
      call('slash-command', 'usr_owner0001', { slashCommand: '/plan', text: '' }),
      { type: 'message', message: msg('msg_plan0001', 'plan: nothing yet', { blocks: planBlocks }) },
      inMsg('due', 'DATE_PICKER', { value: '2026-12-01' }),
      { type: 'message-changed', message: msg('msg_plan0001', 'plan: due 2026-12-01', { blocks: planBlocks }) },
      inMsg('trip', 'DATE_RANGE_PICKER', { values: ['2026-12-01', '2026-12-03'] }),
      inMsg('note', 'PLAIN_TEXT_INPUT', { value: 'buy ${milk}' }),
      call(
        'block-interaction',
        'usr_owner0001',
        { sourceType: 'MESSAGE', sourceId: 'msg_plan0001', actionType: 'BUTTON', onAction: 'details', payload: '{}' },
        answered(details, 'OPEN'),
      ),
      inModal(details, 'rename', answered(renamed, 'UPDATE')),
      inModal(renamed, 'more', answered(more, 'PUSH')),
      submitOf(more, { extra: { extra_input: { type: 'plain_text_input', value: 'later' } } }),
      submitOf(renamed, {
        title: { title_input: { type: 'plain_text_input', value: 'Q4' } },
        due: { due_input: { type: 'date_picker', value: '2026-12-05' } },
      }),
      { type: 'message', message: msg('msg_done0001', 'planned Q4 due 2026-12-05', { blocks: [] }) },
      inHome('home_refresh', 'BUTTON', {}, answered({ ...home, blocks: [] }, 'UPDATE')),
      inHome('home_day', 'DATE_PICKER', { value: '2026-12-24' }),
      inHome('home_note', 'PLAIN_TEXT_INPUT', { value: 'hi' }),
      inHome('home_size', 'STATIC_SELECT_MENU', { value: 'l' }),
      inHome('home_tags', 'CHECKBOXES', { values: ['a'] }),
    ],
  };
  const r = suiteOf(rec);
  t.same(r.suite.tests[0]?.steps, [
    { say: '/plan' },
    { expect: 'ack' },
    { expect: 'message', text: 'plan: nothing yet', buttons: ['Details'], save: 'plan' },
    { date: '2026-12-01', in: 'due', message: '${plan}' },
    { expect: 'ack' },
    { expect: 'updated', text: 'plan: due', buttons: ['Details'] },
    { date: ['2026-12-01', '2026-12-03'], in: 'trip', message: '${plan}' },
    { expect: 'ack' },
    { enter: 'buy $${milk}', in: 'note', message: '${plan}' },
    { expect: 'ack' },
    { click: 'Details', message: '${plan}' },
    { expect: 'modal', title: 'Plan details', inputs: ['Title', 'Due'] },
    ...IN_THE_MODAL,
    { expect: 'message', text: 'planned Q4 due' },
    { click: { onAction: 'home_refresh' }, home: true, as: 'dev' },
    { expect: 'answered' },
    { date: '2026-12-24', in: 'home_day', home: true, as: 'dev' },
    { expect: 'ack' },
    { enter: 'hi', in: 'home_note', home: true, as: 'dev' },
    { expect: 'ack' },
    { select: 'l', in: 'home_size', home: true, as: 'dev' },
    { expect: 'ack' },
  ]);
  t.match(r.notes, [/checkboxes in the app's home view \(home_tags\) is not a step a suite has/]);
  t.same(
    await validateSuite(
      { ...r.suite, app: { manifest: 'manifest.json', start: { command: 'node app.mjs' } } },
      'x.apptest.json',
    ),
    [],
    'valid',
  );
});

t.test('an app called over HTTP: the suite also tests its signature check, unless the person says no', async (t) => {
  const overHttp: Recording = {
    ...standup,
    events: standup.events.map((e) => (e.type === 'call' ? { ...e, call: { ...e.call, transport: 'http' } } : e)),
  };
  const r = suiteOf(overHttp);
  t.equal(r.suite.tests.length, 2);
  t.same(r.suite.tests[1], {
    name: 'calls that are not properly signed are refused',
    steps: [{ expect: 'signature-check' }],
  });
  t.equal(suiteOf(overHttp, { signatureCheck: false }).suite.tests.length, 1);
  const overSocket: Recording = {
    ...standup,
    events: standup.events.map((e) => (e.type === 'call' ? { ...e, call: { ...e.call, transport: 'socket' } } : e)),
  };
  t.equal(suiteOf(overSocket).suite.tests.length, 1, 'not for socket mode (nothing is signed)');
});

t.test(
  "the channels used: the first is the test's own, the others by name, a direct conversation left out",
  async (t) => {
    const RANDOM = 'chn_random001';
    const rec: Recording = {
      people,
      apps: [{ id: APP, name: 'Standup' }],
      channels: [
        { id: CH, name: 'general' },
        { id: RANDOM, name: 'random' },
      ],
      events: [
        call('slash-command', 'usr_owner0001', { slashCommand: '/standup', text: 'A' }),
        { type: 'message', message: msg('msg_a0000001', 'A: joined nobody yet') },
        call('slash-command', 'usr_owner0001', { slashCommand: '/standup', text: 'B', channelId: RANDOM }),
        { type: 'message', message: msg('msg_b0000001', 'B: joined nobody yet', { channelId: RANDOM }) },
        click('usr_dev000001', 'standup_join', 'join', 'msg_b0000001'),
        { type: 'message-changed', message: msg('msg_b0000001', 'B: joined Dev', { channelId: RANDOM }) },
        { type: 'message', message: msg('msg_c0000001', 'C: back home', { blocks: [] }) },
        {
          type: 'message',
          message: { id: 'msg_dm000001', channelId: 'chn_dm000001', author: 'usr_owner0001', text: 'psst', blocks: [] },
        },
      ],
    };
    const r = suiteOf(rec);
    t.same(r.suite.channels, ['random']);
    t.same(r.suite.tests[0]?.steps, [
      { say: '/standup A' },
      { expect: 'ack' },
      { expect: 'message', text: 'A: joined nobody yet', buttons: ['Join', 'Skip'] },
      { say: '/standup B', channel: 'random' },
      { expect: 'ack' },
      { expect: 'message', text: 'B: joined nobody yet', buttons: ['Join', 'Skip'], save: 'standup' },
      { click: 'Join', message: '${standup}', as: 'dev' },
      { expect: 'ack' },
      { expect: 'updated', text: 'B: joined Dev', buttons: ['Join', 'Skip'] },
      { expect: 'message', text: 'C: back home' },
    ]);
    t.match(r.notes, [/direct conversation is left out/]);
    t.same(
      await validateSuite(
        { ...r.suite, app: { manifest: 'manifest.json', start: { command: 'node app.mjs' } } },
        'x.apptest.json',
      ),
      [],
      'valid',
    );
  },
);

t.test('the apps used: the suite is about the one called most, or the one chosen; the others are named', async (t) => {
  const OTHER = 'app_other001';
  const rec: Recording = {
    people,
    apps: [
      { id: APP, name: 'Standup' },
      { id: OTHER, name: 'Polls' },
    ],
    events: [
      call('slash-command', 'usr_owner0001', { slashCommand: '/standup', text: 'A' }),
      call('slash-command', 'usr_owner0001', { slashCommand: '/standup', text: 'B' }),
      {
        type: 'call',
        call: {
          id: 'dlv_poll0001',
          kind: 'slash-command',
          appId: OTHER,
          user: 'usr_owner0001',
          payload: { channelId: CH, slashCommand: '/poll', text: 'lunch?' },
          outcome: 'acked',
          response: {},
        },
      },
    ],
  };
  const most = suiteOf(rec);
  t.equal(most.appId, APP);
  t.equal(most.suite.name, 'Standup');
  t.same(most.apps, [
    { id: APP, name: 'Standup', calls: 2 },
    { id: OTHER, name: 'Polls', calls: 1 },
  ]);
  t.match(most.notes, [/Polls was used too \(1 call\): a suite tests one app/]);
  const chosen = suiteOf(rec, { appId: OTHER });
  t.equal(chosen.suite.name, 'Polls');
  t.same(chosen.suite.tests[0]?.steps, [{ say: '/poll lunch?' }, { expect: 'ack' }]);
  t.match(chosen.notes, [/Standup was used too \(2 calls\)/]);
  t.equal(suiteOf(rec, { appId: 'app_unknown01' }).appId, APP, 'an app not used is not chosen');
});
