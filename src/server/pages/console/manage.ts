/**
 * The workspace's channels and user groups, as a person manages them in the console: archive or
 * delete a channel, make a group and change one (name, handle, description, members, disabled).
 * Every form posts with the console's CSRF field; nothing needs the script.
 */
import { esc } from '../layout.js';
import { actionForm, consolePage, csrfField, type Shell } from './layout.js';

export interface ManagedChannel {
  id: string;
  name: string;
  type: 'PUBLIC' | 'PRIVATE';
  archived: boolean;
  /** The person may archive it (a member; not general; not yet archived). */
  canArchive: boolean;
  /** The person may delete it (its creator; not an initial channel). */
  canDelete: boolean;
}

interface ManagedGroup {
  id: string;
  name: string;
  handle: string;
  description: string;
  disabled: boolean;
  workspaceUserIds: string[];
}

export interface ManageView {
  channels: ManagedChannel[];
  groups: ManagedGroup[];
  /** The workspace's users, who can be members of a group. */
  people: Array<{ id: string; name: string }>;
  notice?: string;
  error?: string;
  /** What a refused form held, shown again (the group's id, or "new"). */
  again?: { group: string; fields: Record<string, unknown> };
}

export const MANAGE_PATH = '/console/manage';
const enc = encodeURIComponent;

function channelsCard(shell: Shell, channels: ManagedChannel[]): string {
  const rows = channels.map((c) => {
    const actions = [
      c.canArchive ? actionForm(`${MANAGE_PATH}/channels/${enc(c.id)}/archive`, shell.csrf, `Archive #${c.name}`) : '',
      c.canDelete ? `<a class="button" href="${MANAGE_PATH}/channels/${esc(enc(c.id))}/delete">Delete #${esc(c.name)}…</a>` : '',
    ].filter(Boolean);
    return `<tr><td><a href="/console/channels/${esc(enc(c.id))}">#${esc(c.name)}</a></td><td>${c.type === 'PRIVATE' ? 'private' : 'public'}</td><td>${c.archived ? '<span class="badge">archived</span>' : 'active'}</td><td><div class="row">${actions.join('') || '<span class="muted">—</span>'}</div></td></tr>`;
  });
  return `<section class="card" aria-labelledby="channels-title"><h2 id="channels-title">Channels</h2>
<p class="muted">A member archives a channel (nothing more can be posted in it); its creator deletes it with its messages. Apps subscribed to CHANNEL_ARCHIVED and CHANNEL_DELETED hear of it.</p>
<div class="scroll"><table><caption class="sr">Channels you can see</caption><thead><tr><th scope="col">Channel</th><th scope="col">Type</th><th scope="col">State</th><th scope="col">Actions</th></tr></thead><tbody>${rows.join('')}</tbody></table></div></section>`;
}

/** The fields of one group's form (`g` the group, or what a refused form held); `key` makes the ids unique on the page. */
function groupFields(key: string, g: Partial<ManagedGroup>, people: ManageView['people']): string {
  const id = (f: string) => `g-${esc(key)}-${f}`;
  const members = new Set(g.workspaceUserIds ?? []);
  const boxes = people.map((p) => `<label class="check"><input type="checkbox" name="members" value="${esc(p.id)}"${members.has(p.id) ? ' checked' : ''}> ${esc(p.name)}</label>`).join('');
  return `<label for="${id('name')}">Name</label><input type="text" id="${id('name')}" name="name" value="${esc(g.name ?? '')}" required maxlength="80">
<label for="${id('handle')}">Handle</label><input type="text" id="${id('handle')}" name="handle" value="${esc(g.handle ?? '')}" maxlength="80" aria-describedby="${id('handle-hint')}"><p class="muted" id="${id('handle-hint')}">Lower-case letters, digits, _ . or -; unique in the workspace.${key === 'new' ? ' Left empty: made from the name.' : ''}</p>
<label for="${id('description')}">Description</label><input type="text" id="${id('description')}" name="description" value="${esc(g.description ?? '')}" maxlength="250">
<fieldset><legend>Members</legend>${boxes || '<span class="muted">No users.</span>'}</fieldset>
<label class="check"><input type="checkbox" name="disabled" value="true"${g.disabled ? ' checked' : ''}> Disabled</label>`;
}

function groupsCard(shell: Shell, v: ManageView): string {
  const again = (key: string) => (v.again?.group === key ? (v.again.fields as Partial<ManagedGroup>) : undefined);
  const items = v.groups.map((g) => {
    const shown = again(g.id) ?? g;
    return `<li><details${again(g.id) ? ' open' : ''}><summary><strong>${esc(g.name)}</strong> @${esc(g.handle)} <span class="muted">${g.workspaceUserIds.length} member${g.workspaceUserIds.length === 1 ? '' : 's'}${g.disabled ? ', disabled' : ''}</span></summary>
<form method="post" action="${MANAGE_PATH}/groups/${esc(enc(g.id))}">${csrfField(shell.csrf)}${groupFields(g.id, shown, v.people)}<div class="row"><button type="submit" class="primary">Save ${esc(g.name)}</button></div></form></details></li>`;
  });
  return `<section class="card" aria-labelledby="groups-title"><h2 id="groups-title">User groups</h2>
<p class="muted">Apps list them (GET /v1/workspaceUsers/groups) and hear WORKSPACE_USER_GROUP_CREATED and _UPDATED.</p>
${items.length ? `<ul class="plain">${items.join('')}</ul>` : '<p class="muted">No groups yet.</p>'}
<h3>New group</h3><form method="post" action="${MANAGE_PATH}/groups">${csrfField(shell.csrf)}${groupFields('new', again('new') ?? {}, v.people)}<div class="row"><button type="submit" class="primary">Create group</button></div></form></section>`;
}

export function managePage(shell: Shell, v: ManageView): string {
  return consolePage(
    'Channels and groups',
    shell,
    `<h1>Channels and groups</h1><p><a href="/console/channels">Back to the workspace</a></p>
${v.notice ? `<p class="ok" role="status">${esc(v.notice)}</p>` : ''}${v.error ? `<p class="error" role="alert">${esc(v.error)}</p>` : ''}
${channelsCard(shell, v.channels)}${groupsCard(shell, v)}`,
  );
}
