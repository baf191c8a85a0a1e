/**
 * What the Standup app does, whatever carries the calls to it (HTTP in app.mjs, a websocket in
 * ../standup-socket/app.mjs). Node only, no dependency: the calls and answers are those of
 * docs/protocol.md, the same an app on the platform's official SDK sends and receives.
 *
 * Every handler gets the call's payload and `reply(answer)`: it replies at once (the daemon gives
 * an app 3 seconds), then does its work through the platform API with the bot's token.
 */
import fs from 'node:fs';

/** KEY=VALUE lines of a .env file (what `appreg apps create --env-out` writes); none when it is missing. */
function readEnvFile(file) {
  try {
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    return Object.fromEntries(lines.map((l) => /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(l)).filter(Boolean).map((m) => [m[1], m[2]]));
  } catch {
    return {};
  }
}

/**
 * The app in folder `dir`: its manifest, its settings (it exits saying how to make them when
 * they are missing), and what it does, with its tokens kept in tokens.json beside it, or in the
 * file STANDUP_TOKENS_FILE names (its test suite keeps them in the run's own folder).
 */
export function loadApp(dir) {
  const manifest = JSON.parse(fs.readFileSync(new URL('manifest.json', dir), 'utf8'));
  let config;
  try {
    config = settings(dir);
  } catch (e) {
    console.error(e.message);
    process.exit(2);
  }
  return { manifest, config, standup: createStandup(config, process.env.STANDUP_TOKENS_FILE || new URL('tokens.json', dir)) };
}

/** The app's settings: the environment, else the .env beside the app. */
function settings(dir) {
  const env = { ...readEnvFile(new URL('.env', dir)), ...process.env };
  const missing = ['PUMBLE_APP_ID', 'PUMBLE_APP_KEY', 'PUMBLE_APP_CLIENT_SECRET', 'PUMBLE_APP_SIGNING_SECRET'].filter((k) => !env[k]);
  if (missing.length) {
    const where = new URL('.', dir).pathname;
    throw new Error(`${missing.join(', ')} not set: create the app first with\n  appreg apps create --file ${where}manifest.json --env-out ${where}.env`);
  }
  return {
    appId: env.PUMBLE_APP_ID,
    appKey: env.PUMBLE_APP_KEY,
    clientSecret: env.PUMBLE_APP_CLIENT_SECRET,
    signingSecret: env.PUMBLE_APP_SIGNING_SECRET,
    apiUrl: (env.PUMBLE_API_URL ?? 'http://127.0.0.1:8740').replace(/\/+$/, ''),
  };
}

function createStandup(config, tokensFile) {
  // The tokens of each workspace the app is installed in (the OAuth exchange's answer), kept in a
  // file beside the app (0600) so that a restart of the app keeps them.
  let tokens = {};
  try {
    tokens = JSON.parse(fs.readFileSync(tokensFile, 'utf8'));
  } catch {
    /* not installed anywhere yet */
  }

  /** A call to the platform API as the app's bot in workspace `ws` (docs/protocol.md §9). */
  async function api(ws, method, path, body) {
    const bot = tokens[ws];
    if (!bot) throw new Error(`not installed in workspace ${ws}`);
    const res = await fetch(config.apiUrl + path, {
      method,
      headers: { token: bot.botToken, 'x-app-token': config.appKey, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${await res.text()}`);
    return res.status === 204 ? undefined : res.json();
  }

  /** OAuth: the code the consent screen sent to the redirect URL, exchanged for the tokens (§3.2). */
  async function exchange(code) {
    const form = new FormData();
    form.set('client-id', config.appId);
    form.set('client-secret', config.clientSecret);
    form.set('code', code);
    const res = await fetch(`${config.apiUrl}/oauth2/access`, { method: 'POST', body: form });
    if (!res.ok) throw new Error(`the code exchange answered ${res.status}: ${await res.text()}`);
    const t = await res.json(); // {accessToken, botToken, userId, botId, workspaceId}
    const users = { ...tokens[t.workspaceId]?.users, [t.userId]: t.accessToken };
    tokens[t.workspaceId] = { botToken: t.botToken, botId: t.botId, users };
    fs.writeFileSync(tokensFile, JSON.stringify(tokens, null, 2), { mode: 0o600 });
    return t;
  }

  const names = new Map();
  /** A user's display name (needs the bot scope user:read). */
  async function nameOf(ws, userId) {
    if (!names.has(userId)) names.set(userId, (await api(ws, 'GET', `/v1/workspaceUsers/${userId}`)).name);
    return names.get(userId);
  }

  // The standups in progress, by the id of their message; and the posts of new ones still on their
  // way: a click can come as soon as the message is there, before the post's answer has come back.
  const standups = new Map();
  const posting = new Set();
  const MOODS = [['great', 'Great'], ['good', 'Good'], ['meh', 'Meh'], ['tired', 'Tired']];
  const plain = (text) => ({ type: 'plain_text', text });

  /** The standup message: who joined (with their mood), who skipped; buttons and a dynamic menu. */
  function standupMessage(s) {
    const list = (set) => [...set].map((n) => (s.moods.has(n) ? `${n} (${s.moods.get(n)})` : n)).join(', ') || 'nobody yet';
    const text = `${s.topic}: joined ${list(s.joined)}; skipped ${list(s.skipped)}`;
    return {
      text,
      blocks: [
        { type: 'section', text: plain(text) },
        {
          type: 'actions',
          elements: [
            { type: 'button', onAction: 'standup_join', value: 'join', style: 'primary', text: plain('Join') },
            { type: 'button', onAction: 'standup_skip', value: 'skip', text: plain('Skip') },
            { type: 'dynamic_select_menu', onAction: 'pick_mood', placeholder: plain('Your mood') },
          ],
        },
      ],
    };
  }

  const notInstalled = () => ({ message: `Standup is not installed in this workspace yet: run appreg authorize ${config.appId} --follow` });

  /** One handler per kind of call (the payload's messageType). */
  const handlers = {
    // /standup [topic]: post the standup message in the channel.
    async SLASH_COMMAND(p, reply) {
      if (!tokens[p.workspaceId]) return reply(notInstalled());
      reply({});
      const s = { topic: p.text.trim() || 'Daily standup', channelId: p.channelId, joined: new Set(), skipped: new Set(), moods: new Map() };
      const post = api(p.workspaceId, 'POST', `/v1/channels/${p.channelId}/messages`, standupMessage(s)).then((msg) => (standups.set(msg.id, s), msg));
      posting.add(post);
      const msg = await post.finally(() => posting.delete(post));
      console.log(`${p.slashCommand}: posted standup ${msg.id} in ${p.channelId}`);
    },

    // Join, Skip, or a mood picked: update the standup message.
    async BLOCK_INTERACTION(p, reply) {
      reply({});
      if (!standups.has(p.sourceId)) await Promise.allSettled([...posting]);
      const s = standups.get(p.sourceId);
      if (!s) return;
      const who = await nameOf(p.workspaceId, p.userId);
      const { value } = JSON.parse(p.payload || '{}');
      if (p.onAction === 'standup_join') s.joined.add(who), s.skipped.delete(who);
      else if (p.onAction === 'standup_skip') s.skipped.add(who), s.joined.delete(who);
      else if (p.onAction === 'pick_mood') s.moods.set(who, MOODS.find(([v]) => v === value)?.[1] ?? value);
      await api(p.workspaceId, 'PUT', `/v1/channels/${s.channelId}/messages/${p.sourceId}`, standupMessage(s));
      console.log(`${p.onAction}: ${who} in standup ${p.sourceId}`);
    },

    // The dynamic menu: the moods matching what the user typed.
    async DYNAMIC_MENU(p, reply) {
      const q = (p.query ?? '').toLowerCase();
      const options = MOODS.filter(([, label]) => label.toLowerCase().includes(q)).map(([value, label]) => ({ text: plain(label), value }));
      reply({ onAction: p.onAction, triggerId: p.triggerId, options });
    },

    // The global shortcut "Start standup": a modal asking for today's answer.
    async SHORTCUT(p, reply) {
      reply({
        triggerId: p.triggerId,
        viewType: 'MODAL',
        action: 'OPEN',
        view: {
          type: 'MODAL',
          callbackId: 'standup_answer',
          title: plain('Start standup'),
          submit: plain('Post'),
          close: plain('Cancel'),
          blocks: [{ type: 'input', blockId: 'answer', label: plain('What are you working on today?'), element: { type: 'plain_text_input', onAction: 'text' } }],
        },
      });
    },

    // The modal submitted: post the answer in the channel (acknowledging closes the modal).
    async VIEW_ACTION(p, reply) {
      if (p.viewActionType === 'SUBMIT' && !tokens[p.workspaceId]) return reply(notInstalled());
      reply({});
      if (p.viewActionType !== 'SUBMIT' || p.view.callbackId !== 'standup_answer') return;
      const answer = p.view.state?.values?.answer?.text?.value ?? '';
      const who = await nameOf(p.workspaceId, p.userId);
      const msg = await api(p.workspaceId, 'POST', `/v1/channels/${p.channelId}/messages`, { text: `${who}'s standup: ${answer}` });
      console.log(`standup answer from ${who}: posted ${msg.id}`);
    },

    // NEW_MESSAGE that mentions @standup: a reply in its thread. (The bot's own messages come too: skip them.)
    async PUMBLE_EVENT(p, reply) {
      reply({});
      if (p.eventType !== 'NEW_MESSAGE') return;
      const m = JSON.parse(p.body); // the event body is a JSON string: {mId, cId, aId, tx, …}
      const bot = tokens[p.workspaceId];
      if (!bot || m.aId === bot.botId || !/@standup\b/i.test(m.tx)) return;
      const msg = await api(p.workspaceId, 'POST', `/v1/channels/${m.cId}/messages/${m.mId}`, { text: 'Here! Type /standup to start one, or use the shortcut "Start standup".' });
      console.log(`mentioned in ${m.mId}: replied ${msg.id} in its thread`);
    },
  };

  /** Run the handler of `payload`; `reply` sends the answer (once). */
  async function handle(payload, reply) {
    const handler = handlers[payload.messageType];
    if (!handler) return reply({});
    await handler(payload, reply);
  }

  return { handle, exchange };
}
