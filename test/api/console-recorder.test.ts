/**
 * Issue 37, the recorder's pages and calls without a browser: Record a test, Act as (the owner only, only while the
 * recording is on: docs/security.md AS3), Stop, the suite page and its download, the edits; a recording is its
 * starter's only, in the console and in the API; a returnTo elsewhere is not followed; an act-as token is refused.
 */
import t from 'tap';
import { manifest, startTestDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/until.js';
import { signIn } from '../helpers/console.js';
import { secondUser } from '../fixtures/redirects-flow.js';
import { must } from '../../src/must.js';

t.test('the recorder in the console', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const dev = await secondUser(d);
  const owner = await signIn(d);
  const form = (cookie: string, path: string, fields: Record<string, string>) =>
    fetch(`${d.url}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
    });
  const page = async (cookie: string, path = '/console/channels') => {
    let res = await fetch(`${d.url}${path}`, { headers: { cookie, accept: 'text/html' }, redirect: 'manual' });
    if (res.status === 303) res = await fetch(`${d.url}${must(res.headers.get('location'))}`, { headers: { cookie } });
    return { status: res.status, text: await res.text() };
  };

  t.match((await page(owner.cookie)).text, /Record a test/, 'the workspace offers to record');
  const started = await form(owner.cookie, '/console/recordings', { csrf: owner.csrf, returnTo: '/console/channels' });
  t.equal(started.status, 303);
  t.equal(started.headers.get('location'), '/console/channels', 'back where it was started');
  const on = (await page(owner.cookie)).text;
  t.match(on, /<strong>Recording<\/strong>/);
  t.match(on, /<option value="[^"]+">Second User<\/option>/, 'the members to act as');
  const id = must(/action="\/console\/recordings\/([^/"]+)\/act-as"/.exec(on)?.[1]);

  await t.test('act as another member: the owner only, not a bot, nowhere but back to the console', async (t) => {
    const noCsrf = await form(owner.cookie, `/console/recordings/${id}/act-as`, { user: dev.id });
    t.equal(noCsrf.status, 403, 'the CSRF check');
    const nobody = await form(owner.cookie, `/console/recordings/${id}/act-as`, {
      csrf: owner.csrf,
      user: 'wu_nobody',
    });
    t.equal(nobody.status, 404);
    const acted = await form(owner.cookie, `/console/recordings/${id}/act-as`, {
      csrf: owner.csrf,
      user: dev.id,
      returnTo: 'https://evil.example/',
    });
    t.equal(acted.status, 303);
    t.equal(acted.headers.get('location'), '/console/channels', 'a returnTo elsewhere is not followed');
    t.match((await page(owner.cookie)).text, /Signed in as Owner, acting as Second User/);

    const devSignedIn = await d.api(`${dev.mgmt}/web/sign-in-links`, {
      method: 'POST',
      json: {},
      headers: { authtoken: dev.token },
    });
    const link = ((await devSignedIn.json()) as { url: string }).url;
    const landed = await fetch(link, { redirect: 'manual' });
    const cookie = must(
      landed.headers
        .getSetCookie()
        .find((c) => c.startsWith('appreg_session='))
        ?.split(';')[0],
    );
    const home = (await page(cookie, '/')).text;
    const csrf = must(/<meta name="csrf" content="([^"]+)">/.exec(home)?.[1]);
    t.equal((await form(cookie, '/console/recordings', { csrf })).status, 303, 'Dev records too');
    const devOn = (await page(cookie)).text;
    const devId = must(/action="\/console\/recordings\/([^/"]+)\/act-as"/.exec(devOn)?.[1]);
    const refused = await form(cookie, `/console/recordings/${devId}/act-as`, { csrf, user: d.workspaceUserId });
    t.equal(refused.status, 403, 'only the owner acts as someone else');
    t.match(await refused.text(), /Only the owner of the workspace/);
    t.equal((await page(cookie, `/console/recordings/${id}`)).status, 404, "the owner's recording is not Dev's");
    t.equal((await form(cookie, `/console/recordings/${id}/stop`, { csrf })).status, 404);
    const api = await d.api(`${dev.mgmt}/recordings/${id}`, { headers: { authtoken: dev.token } });
    t.equal(api.status, 404, 'nor through the API');
  });

  await t.test('stop: the suite page, the edits, the download; acting ends', async (t) => {
    // what a person typed is shown escaped, in the steps and in the highlighted YAML
    const said = await d.api(`${d.mgmt}/channels/general/messages`, {
      method: 'POST',
      json: { text: '<img src=x onerror=alert(1)> & ${x}' },
    });
    t.equal(said.status, 201);
    const stopped = await form(owner.cookie, `/console/recordings/${id}/stop`, { csrf: owner.csrf });
    t.equal(stopped.status, 303);
    t.equal(stopped.headers.get('location'), `/console/recordings/${id}`);
    const shown = await page(owner.cookie, `/console/recordings/${id}`);
    t.equal(shown.status, 200);
    t.match(shown.text, /<h1>Recorded test<\/h1>/);
    t.match(shown.text, /Signed in as Owner</, 'no longer acting as Dev');
    t.notMatch(shown.text, /<img src=x/, 'nothing typed becomes markup');
    t.match(
      shown.text,
      'say</span>:<span class="y-v"> &lt;img src=x onerror=alert(1)&gt; &amp; $${x}</span>',
      'escaped, and ${ written as a suite writes it literally ($${), not highlighted as a reference',
    );
    const edited = await form(owner.cookie, `/console/recordings/${id}`, {
      csrf: owner.csrf,
      suiteName: 'Nothing yet',
      testName: 'an empty one',
    });
    t.equal(edited.status, 303);
    const dl = await fetch(`${d.url}/console/recordings/${id}/suite.yaml`, { headers: { cookie: owner.cookie } });
    t.equal(dl.status, 200);
    t.equal(dl.headers.get('content-disposition'), 'attachment; filename="nothing-yet-recorded.apptest.yaml"');
    t.match(await dl.text(), /name: Nothing yet\n[\s\S]*- name: an empty one\n/);
  });

  await t.test('two apps used: the one called most, or the one chosen in the editor', async (t) => {
    const started = await form(owner.cookie, '/console/recordings', {
      csrf: owner.csrf,
      returnTo: '/console/channels',
    });
    t.equal(started.status, 303);
    const rec = must(/action="\/console\/recordings\/([^/"]+)\/act-as"/.exec((await page(owner.cookie)).text)?.[1]);
    const app = async (name: string) =>
      (await (
        await d.api(`${d.mgmt}/apps`, { method: 'POST', json: manifest({ name, displayName: name }) })
      ).json()) as {
        id: string;
      };
    const [polls, tasks] = [await app('Polls'), await app('Tasks')];
    const call = (appId: string) =>
      d.api(`${d.mgmt}/deliveries`, { method: 'POST', json: { appId, kind: 'slash-command', text: 'go' } });
    for (const appId of [tasks.id, tasks.id, polls.id]) t.equal((await call(appId)).status, 201);
    await until(
      async () => (await (await d.api(`${d.mgmt}/recordings/${rec}`)).json()) as { recording: { events: number } },
      (r) => r.recording.events >= 3,
    );
    t.equal((await form(owner.cookie, `/console/recordings/${rec}/stop`, { csrf: owner.csrf })).status, 303);
    const shown = (await page(owner.cookie, `/console/recordings/${rec}`)).text;
    t.match(shown, /<select id="suite-app" name="app">/, 'the apps used are offered');
    t.match(shown, new RegExp(`<option value="${tasks.id}" selected>Tasks \\(2 calls\\)</option>`));
    t.match(shown, /Polls was used too \(1 call\)/);
    const chosen = await form(owner.cookie, `/console/recordings/${rec}`, { csrf: owner.csrf, app: polls.id });
    t.equal(chosen.status, 303);
    const suite = (await (await d.api(`${d.mgmt}/recordings/${rec}/suite`)).json()) as {
      suite: { name: string };
      appId: string;
    };
    t.match(suite, { suite: { name: 'Polls' }, appId: polls.id }, 'the suite is about the app chosen');
  });

  await t.test('the API: the starter only, no act-as token', async (t) => {
    const mine = await d.api(`${d.mgmt}/recordings/${id}/suite`);
    t.equal(mine.status, 200);
    t.match(await mine.json(), { suite: { name: 'Nothing yet' }, yaml: /name: Nothing yet/ });
    const actAs = await d.api(`${d.mgmt}/act-as`, { method: 'POST', json: { user: dev.id } });
    const token = ((await actAs.json()) as { authToken: string }).authToken;
    const refused = await d.api(`${dev.mgmt}/recordings`, { method: 'POST', headers: { authtoken: token } });
    t.equal(refused.status, 403, 'an act-as token records nobody');
  });
});
