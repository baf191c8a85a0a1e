/**
 * The recorder in the console (docs/testing.md, "Recording a test"): the bar over the workspace pages (Record a test;
 * while recording, who the person acts as and Stop), and the page of a stopped recording: the suite as YAML,
 * highlighted, with the editor (rename, drop steps, loosen a text) and the download.
 */
import { html } from 'ghtml';
import { consolePage, csrfField, type Shell } from './layout.js';

/** What the bar shows: the recording that is on, if any, and who the owner may act as. */
export interface RecorderShell {
  /** Where the bar's forms come back to. */
  returnTo: string;
  on?: { id: string; events: number; actingAs?: string };
  /** The person first, then the workspace's other members. */
  people: Array<{ id: string; name: string }>;
}

export function recorderBar(r: RecorderShell, csrf: string): string {
  const back = html`<input type="hidden" name="returnTo" value="${r.returnTo}">`;
  if (!r.on)
    return html`<form class="recorder row" method="post" action="/console/recordings">!${csrfField(csrf)}!${back}<button type="submit" class="primary" id="record-start">● Record a test</button><span class="muted">what you do from now on, and what the app does in answer, becomes a test</span></form>`;
  const id = encodeURIComponent(r.on.id);
  const options = r.people
    .map((p) => html`<option value="${p.id}"${p.name === r.on?.actingAs ? ' selected' : ''}>${p.name}</option>`)
    .join('');
  return html`<div class="recorder row" role="status"><span class="rec-dot" aria-hidden="true">●</span><strong>Recording</strong><span class="muted">${String(r.on.events)} events</span><form method="post" action="/console/recordings/${id}/act-as" class="row">!${csrfField(csrf)}!${back}<label for="act-as" class="small">Act as</label><select id="act-as" name="user">!${options}</select><button type="submit" id="act-as-switch">Switch</button></form><form method="post" action="/console/recordings/${id}/stop" class="push">!${csrfField(csrf)}<button type="submit" class="danger" id="record-stop">■ Stop and show the test</button></form></div>`;
}

/** YAML as HTML with its keys, strings, references and comments marked (the suite is escaped first). */
function highlightYaml(yaml: string): string {
  const esc = (s: string) =>
    s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
  return yaml
    .split('\n')
    .map((line) => {
      const c = /^(\s*)(#.*)$/.exec(line);
      if (c) return `${esc(c[1] ?? '')}<span class="y-c">${esc(c[2] ?? '')}</span>`;
      const m = /^(\s*(?:- )?)([A-Za-z_$][\w$.-]*|"[^"]*"|'[^']*')(:)(\s.*|)$/.exec(line);
      const value = (v: string) => esc(v).replace(/(?<!\$)\$\{[^}]*\}/g, (ref) => `<span class="y-r">${ref}</span>`);
      if (!m) return value(line);
      return `${esc(m[1] ?? '')}<span class="y-k">${esc(m[2] ?? '')}</span>${m[3]}<span class="y-v">${value(m[4] ?? '')}</span>`;
    })
    .join('\n');
}

export interface RecordingPageData {
  id: string;
  stopped: boolean;
  yaml: string;
  suiteName: string;
  testName: string;
  steps: Array<Record<string, unknown>>;
  dropped: number[];
  loosened: number[];
  notes: string[];
  /** Whether the suite also tests the app's signature check (an app called over HTTP): undefined, not offered. */
  signatureCheck?: boolean;
  /** The file name of the download. */
  fileName: string;
  /** The apps the person used, when more than one (the suite is about one of them), and the one it is about. */
  apps?: Array<{ id: string; name: string; calls: number }>;
  appId?: string;
}

/** How a step reads in the editor's list: its verb and value, and its other fields. */
function stepLine(s: Record<string, unknown>): string {
  const entries = Object.entries(s);
  return entries.map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' · ');
}

export function recordingPage(shell: Shell, d: RecordingPageData): string {
  const id = encodeURIComponent(d.id);
  const rows = d.steps
    .map((s, i) => {
      const loosenable = typeof s.text === 'string';
      return html`<tr><td><label class="check"><input type="checkbox" name="drop" value="${String(i)}"${d.dropped.includes(i) ? ' checked' : ''}> drop</label></td><td>!${loosenable ? html`<label class="check"><input type="checkbox" name="loose" value="${String(i)}"${d.loosened.includes(i) ? ' checked' : ''}> looser text</label>` : ''}</td><td><code>${stepLine(s)}</code></td></tr>`;
    })
    .join('');
  const notes = d.notes.length
    ? html`<div class="notice"><p>Not recorded as it happened:</p><ul>!${d.notes.map((n) => html`<li>${n}</li>`).join('')}</ul></div>`
    : '';
  return consolePage(
    'Recorded test',
    shell,
    html`<div class="card"><h1>Recorded test</h1>!${d.stopped ? '' : html`<p class="notice">Still recording: stop it in the workspace to see the whole test.</p>`}!${notes}
<form method="post" action="/console/recordings/${id}" id="suite-editor">!${csrfField(shell.csrf)}
<label for="suite-name">Suite name</label><input type="text" id="suite-name" name="suiteName" value="${d.suiteName}" maxlength="200">
<label for="test-name">Test name</label><input type="text" id="test-name" name="testName" value="${d.testName}" maxlength="200">
!${d.apps && d.apps.length > 1 ? html`<label for="suite-app">The app it tests</label><select id="suite-app" name="app">!${d.apps.map((a) => html`<option value="${a.id}"${a.id === d.appId ? ' selected' : ''}>${a.name} (${a.calls === 1 ? '1 call' : `${a.calls} calls`})</option>`).join('')}</select>` : ''}
!${d.signatureCheck === undefined ? '' : html`<label class="check"><input type="checkbox" name="signature" value="on" id="suite-signature"${d.signatureCheck ? ' checked' : ''}> also a test that the app refuses calls that are not properly signed</label>`}
<h2>Steps</h2><div class="scroll"><table><thead><tr><th>Drop</th><th>Match</th><th>Step</th></tr></thead><tbody>!${rows}</tbody></table></div>
<p class="row"><button type="submit" class="primary" id="suite-apply">Apply changes</button></p></form>
<h2>The suite</h2><pre class="yaml" id="suite-yaml">!${highlightYaml(d.yaml)}</pre>
<p class="row"><a class="button primary" id="suite-download" href="/console/recordings/${id}/suite.yaml" download="${d.fileName}">Download ${d.fileName}</a></p>
<p class="muted">Save it next to the app's manifest and run <code>appreg test</code>. Or write it there from the terminal, with the app's start command guessed from its folder: <code>appreg test --record-out path/to/app/${d.fileName} --recording ${d.id}</code>.</p></div>`,
  );
}
