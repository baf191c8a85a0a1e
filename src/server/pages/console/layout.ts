/**
 * The console's HTML shell: server-rendered, one stylesheet inline (allowed by its hash), one
 * small script served by the daemon at SCRIPT_PATH (script-src 'self'), nothing from elsewhere.
 * Light and dark follow prefers-color-scheme; the layout reads at 360 px wide.
 */
import { html } from 'ghtml';
import crypto from 'node:crypto';
import { page } from '../layout.js';

export const SCRIPT_PATH = '/console/console.js';

const CSS = `
:root{color-scheme:light dark;--bg:#f3f4f6;--card:#fff;--fg:#111827;--muted:#4b5563;--line:#e5e7eb;--accent:#1d4ed8;--accent-fg:#fff;--bad:#991b1b;--bad-bg:#fee2e2;--good:#065f46;--good-bg:#d1fae5;--warn:#78350f;--warn-bg:#fef3c7;--code:#f9fafb}
@media (prefers-color-scheme:dark){:root{--bg:#0b1120;--card:#111827;--fg:#e5e7eb;--muted:#9ca3af;--line:#374151;--accent:#60a5fa;--accent-fg:#0b1120;--bad:#fecaca;--bad-bg:#7f1d1d;--good:#a7f3d0;--good-bg:#064e3b;--warn:#fde68a;--warn-bg:#78350f;--code:#0f172a}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
a{color:var(--accent)}
header{background:var(--card);border-bottom:1px solid var(--line);padding:.5rem 1rem;display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center}
header .brand{font-weight:700;margin-right:.5rem}
nav a{display:inline-block;padding:.5rem .6rem;border-radius:6px;text-decoration:none;color:var(--fg)}
nav a[aria-current=page]{background:var(--bg);font-weight:600}
header form{margin-left:auto;display:flex;gap:.4rem;align-items:center}
header .who{color:var(--muted);font-size:.85rem}
main{max-width:72rem;margin:0 auto;padding:1rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:1rem;margin:0 0 1rem;overflow-wrap:anywhere}
h1{font-size:1.3rem;margin:.25rem 0 .75rem}
h2{font-size:1.05rem;margin:1rem 0 .5rem}
p{margin:.5rem 0}
.muted{color:var(--muted);font-size:.9rem}
table{width:100%;border-collapse:collapse}
th,td{text-align:left;padding:.45rem .5rem;border-top:1px solid var(--line);vertical-align:top}
th{font-size:.85rem;color:var(--muted);font-weight:600}
th,td{overflow-wrap:normal}
td code{word-break:break-all}
caption{text-align:left;padding:.25rem 0}
.card>h2:first-child{margin-top:0}
.scroll{overflow-x:auto}
code,pre{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:var(--code);border:1px solid var(--line);border-radius:8px;padding:.6rem;overflow-x:auto;margin:.25rem 0;white-space:pre}
label{display:block;font-weight:600;margin:.6rem 0 .2rem}
input,select,textarea{font:inherit;color:inherit;background:var(--card);padding:.5rem;border:1px solid var(--muted);border-radius:8px;max-width:100%}
input,select{height:2.6rem}
input[type=file]{height:auto}
summary{cursor:pointer;padding:.25rem 0}
input[type=text],input[type=number],textarea,select.wide{width:100%}
textarea{font:13px/1.45 ui-monospace,Menlo,Consolas,monospace;min-height:16rem}
button,.button{display:inline-block;font:inherit;font-weight:600;padding:.5rem .9rem;border-radius:8px;border:1px solid var(--muted);background:var(--card);color:var(--fg);cursor:pointer;min-height:40px;text-decoration:none}
button.primary,.button.primary{background:var(--accent);border-color:var(--accent);color:var(--accent-fg)}
button.danger{border-color:var(--bad);color:var(--bad)}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
input:disabled,button:disabled,select:disabled,textarea:disabled{opacity:.55;cursor:not-allowed}
.row{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin:.5rem 0}
.row form{display:inline}
.push{margin-left:auto}
.filters{display:flex;flex-wrap:wrap;gap:.5rem;align-items:end}
.filters label{margin:0;font-size:.85rem}
.badge{display:inline-block;border-radius:999px;padding:0 .5rem;font-size:.8rem;background:var(--bg);border:1px solid var(--line);white-space:nowrap}
.s-delivered{background:var(--good-bg);color:var(--good)}
.s-failed,.s-cancelled{background:var(--bad-bg);color:var(--bad)}
.s-retrying,.s-pending{background:var(--warn-bg);color:var(--warn)}
.error{background:var(--bad-bg);color:var(--bad);border-radius:8px;padding:.5rem .75rem}
.notice{background:var(--warn-bg);color:var(--warn);border-radius:8px;padding:.5rem .75rem}
.ok{background:var(--good-bg);color:var(--good);border-radius:8px;padding:.5rem .75rem}
ol.json{list-style:none;margin:.25rem 0;padding:.5rem;background:var(--code);border:1px solid var(--line);border-radius:8px;overflow-x:auto;font:13px/1.45 ui-monospace,Menlo,Consolas,monospace}
ol.json li{white-space:pre}
ol.json li.bad{background:var(--bad-bg)}
ol.json li.msg{white-space:normal;color:var(--bad);font-family:system-ui,sans-serif;padding:.1rem .4rem;border-left:3px solid var(--bad)}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:.25rem 0}
dt{color:var(--muted)}
dd{margin:0;overflow-wrap:anywhere}
ul.plain{list-style:none;padding:0;margin:.25rem 0}
ul.plain li{padding:.3rem 0;border-top:1px solid var(--line)}
.live{font-size:.85rem;color:var(--muted)}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.workspace{display:grid;grid-template-columns:12rem 1fr;gap:1rem;align-items:start}
.channels h2{font-size:.9rem;color:var(--muted);margin:.25rem 0}
.channels a{display:block;padding:.35rem .5rem;border-radius:6px;text-decoration:none}
.channels a[aria-current=page]{background:var(--card);font-weight:600;border:1px solid var(--line)}
.timeline{margin:0 0 .75rem;list-style:none;padding:0}
.scrollback{display:flex;flex-direction:column-reverse;overflow-y:auto;max-height:calc(100vh - 17rem);min-height:12rem;overscroll-behavior:contain}
.reactions{display:flex;flex-wrap:wrap;gap:.3rem;align-items:center;margin:.25rem 0}
button.reaction,.reaction{min-height:28px;padding:0 .5rem;border-radius:999px;font-weight:400;border:1px solid var(--line);background:var(--bg);color:var(--fg)}
button.reaction[aria-pressed=true]{border-color:var(--accent);background:var(--card);color:var(--accent)}
details.react{position:relative;display:inline-block;margin-left:.5rem;vertical-align:middle}
details.react summary{list-style:none;padding:0 .45rem;border:1px solid var(--line);border-radius:999px;font-size:.85rem;line-height:1.5}
details.react form{position:absolute;left:0;z-index:2;background:var(--card);border:1px solid var(--line);border-radius:8px;padding:.3rem;display:flex;gap:.2rem}
details.react button{min-height:36px;padding:0 .4rem;border:0;background:none;font-size:1.1rem}
@media (hover:hover){.msg:not(:hover):not(:focus-within) details.react:not([open]){opacity:0}}
[hidden]{display:none!important}
.timeline li.msg{padding:.5rem 0}
.msg .meta{font-size:.9rem}
.msg p{margin:.2rem 0}
.msg.eph{background:var(--warn-bg);color:var(--warn);border-radius:8px;padding:.5rem}
.msg blockquote{border-left:3px solid var(--line);margin:.25rem 0;padding-left:.6rem}
.msg hr{border:0;border-top:1px solid var(--line)}
.mention{color:var(--accent);font-weight:600}
.fields{display:grid;grid-template-columns:repeat(auto-fit,minmax(10rem,1fr));gap:.25rem 1rem}
.attachment{border-left:4px solid var(--line);padding:.1rem .6rem;margin:.3rem 0}
.actions{margin:.3rem 0;align-items:flex-start}
.pick{display:inline-flex;flex-wrap:wrap;gap:.3rem;align-items:center;max-width:100%}
.pick.combo{display:inline-grid;grid-template-columns:minmax(0,1fr) auto;align-items:center}
.combo input[role=combobox]{width:14rem;max-width:100%}
.combo input[role=combobox].wide{width:100%}
.combo ul.listbox{grid-column:1/-1;grid-row:2}
ul.listbox{list-style:none;margin:.2rem 0 0;padding:.25rem;background:var(--card);border:1px solid var(--line);border-radius:8px;max-height:14rem;overflow-y:auto;min-width:12rem}
ul.listbox li{padding:.35rem .6rem;border-radius:6px;cursor:pointer}
ul.listbox li[aria-selected=true],ul.listbox li:hover{background:var(--bg);outline:1px solid var(--accent)}
ul.listbox li.none{cursor:default;color:var(--muted);outline:0;background:none}
.actions .el{display:inline-flex;flex-wrap:wrap;gap:.3rem;align-items:flex-start;max-width:100%}
fieldset.checks{display:inline-block;margin:0;padding:.2rem .6rem}
label.small{display:inline;font-weight:400;margin:0}
button.warning{border-color:var(--warn);color:var(--warn)}
[popover].confirm{max-width:24rem;margin:auto;color:var(--fg)}
.section.with-accessory{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:flex-start}
pre.wrap{white-space:pre-wrap;overflow-wrap:anywhere}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:.5rem 1rem}
.pair>div{min-width:0}
h3{font-size:.9rem;margin:.4rem 0 .2rem}
td.target code{word-break:break-all}
.composer{display:flex;gap:.5rem}
.composer input{flex:1;min-width:0}
textarea.short{min-height:5rem;font:inherit}
fieldset{border:1px solid var(--line);border-radius:8px}
label.check{display:flex;gap:.4rem;align-items:center;font-weight:400;margin:.2rem 0}
input[type=checkbox]{height:auto;margin:0}
.backdrop{position:fixed;inset:0;background:rgba(0,0,0,.45);display:flex;align-items:flex-start;justify-content:center;padding:1rem;overflow:auto}
.modal{width:32rem;max-width:100%;margin-top:2rem}
details.more{float:right;position:relative}
details.more summary,details.menu summary{list-style:none;padding:.2rem .6rem;border:1px solid var(--line);border-radius:8px;min-height:32px}
details.menu{margin-left:auto;position:relative}
details.more form,details.menu form{position:absolute;right:0;z-index:2;background:var(--card);border:1px solid var(--line);border-radius:8px;padding:.4rem;min-width:12rem;max-width:80vw}
details.more button,details.menu button{width:100%;text-align:left;border:0}
.recorder{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:.4rem .75rem;margin:0 0 1rem}
.recorder .row{margin:0}
.rec-dot{color:#dc2626}
pre.yaml .y-k{color:var(--accent);font-weight:600}
pre.yaml .y-c{color:var(--muted);font-style:italic}
pre.yaml .y-r{color:var(--good);background:var(--good-bg);border-radius:4px}
@media (max-width:640px){.pair{grid-template-columns:1fr}.workspace{grid-template-columns:1fr}.channels ul{display:flex;flex-wrap:wrap;gap:.25rem}main{padding:.5rem}.card{padding:.75rem}th.wide,td.wide{display:none}header form{margin-left:0;width:100%}dl{grid-template-columns:1fr}dt{margin-top:.4rem}}
`;

const STYLE_HASH = `'sha256-${crypto.createHash('sha256').update(CSS).digest('base64')}'`;

/** The console's CSP: the consent page's, plus the script at SCRIPT_PATH and the live stream (connect-src 'self'). */
export const CONSOLE_CSP = [
  "default-src 'none'",
  `style-src ${STYLE_HASH}`,
  "script-src 'self'",
  "connect-src 'self'",
  "img-src 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export interface Shell {
  /** Which nav entry is current. */
  section: 'apps' | 'deliveries' | 'workspace';
  userName: string;
  csrf: string;
  workspaces: Array<{ id: string; name: string; selected: boolean }>;
  /** The recorder's bar (pages/console/recorder.ts), shown over the workspace pages. */
  recorderBar?: string;
}

export function consolePage(title: string, shell: Shell, body: string): string {
  const nav = (href: string, label: string, on: boolean) =>
    html`<a href="${href}"!${on ? ' aria-current="page"' : ''}>!${label}</a>`;
  const switcher =
    shell.workspaces.length > 1
      ? html`<form method="post" action="/console/workspace"><input type="hidden" name="csrf" value="${shell.csrf}"><label for="ws" class="who">Workspace</label><select id="ws" name="workspaceId">!${shell.workspaces
          .map((w) => html`<option value="${w.id}"${w.selected ? ' selected' : ''}>${w.name}</option>`)
          .join('')}</select><button type="submit">Switch</button></form>`
      : html`<span class="who">${shell.workspaces[0]?.name ?? ''}</span>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<meta name="csrf" content="${shell.csrf}">
<title>${title} · appreg</title>
<style>!${CSS}</style>
<script src="${SCRIPT_PATH}" defer></script>
</head>
<body>
<header><span class="brand">appreg</span><nav aria-label="Console">!${nav('/', 'Apps', shell.section === 'apps')}!${nav('/console/deliveries', 'Deliveries', shell.section === 'deliveries')}!${nav('/console/channels', 'Workspace', shell.section === 'workspace')}</nav><span class="who">Signed in as ${shell.userName}</span>!${switcher}<form method="post" action="/console/sign-out"><input type="hidden" name="csrf" value="${shell.csrf}"><button type="submit">Sign out</button><button type="submit" formaction="/console/sign-out-everywhere" title="Every browser signed in to your account, this one included">Sign out everywhere</button></form></header>
<main id="main">!${shell.section === 'workspace' && shell.recorderBar ? shell.recorderBar : ''}!${body}</main>
</body>
</html>`;
}

/** A hidden CSRF field for a form of the console. */
export const csrfField = (token: string) => html`<input type="hidden" name="csrf" value="${token}">`;

/** A one-button POST form (Publish, Replay, …): the button's text is its accessible name. */
export function actionForm(action: string, csrf: string, label: string, cls = ''): string {
  return html`<form method="post" action="${action}">!${csrfField(csrf)}<button type="submit"!${cls ? html` class="${cls}"` : ''}>${label}</button></form>`;
}

/**
 * The console's error and signed-out pages: the consent screen's shell (sent under its own CSP,
 * whose style hash is that shell's), with a way back to the console.
 */
export function plainPage(title: string, message: string): string {
  return page(
    title,
    html`<div class="card" role="alert"><h1>${title}</h1><p class="error">${message}</p><p><a href="/">Back to the console</a></p></div>`,
  );
}
