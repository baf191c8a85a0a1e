/**
 * The workspace's channels and user groups, as a person manages them in the console: archive or
 * delete a channel, make a group and change one (name, handle, description, members, disabled).
 * Every form posts with the console's CSRF field; nothing needs the script.
 */
import { html } from 'ghtml';
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

/** What a group's form holds: a new group's handle may be left out (made from its name). */
export type GroupFields = Omit<ManagedGroup, 'id' | 'handle'> & { handle?: string };

export interface ManageView {
  channels: ManagedChannel[];
  groups: ManagedGroup[];
  /** The workspace's users, who can be members of a group. */
  people: Array<{ id: string; name: string }>;
  notice?: string;
  error?: string;
  /** What a refused form held, shown again (the group's id, or "new"). */
  again?: { group: string; fields: GroupFields };
}

export const MANAGE_PATH = '/console/manage';
const enc = encodeURIComponent;

function channelsCard(shell: Shell, channels: ManagedChannel[]): string {
  const rows = channels.map((c) => {
    const actions = [
      c.canArchive ? actionForm(`${MANAGE_PATH}/channels/${enc(c.id)}/archive`, shell.csrf, `Archive #${c.name}`) : '',
      c.canDelete
        ? html`<a class="button" href="${MANAGE_PATH}/channels/${enc(c.id)}/delete">Delete #${c.name}…</a>`
        : '',
    ].filter(Boolean);
    return html`<tr><td><a href="/console/channels/${enc(c.id)}">#${c.name}</a></td><td>${c.type === 'PRIVATE' ? 'private' : 'public'}</td><td>!${c.archived ? '<span class="badge">archived</span>' : 'active'}</td><td><div class="row">!${actions.join('') || '<span class="muted">—</span>'}</div></td></tr>`;
  });
  return html`<section class="card" aria-labelledby="channels-title"><h2 id="channels-title">Channels</h2>
<p class="muted">A member archives a channel (nothing more can be posted in it); its creator deletes it with its messages. Apps subscribed to CHANNEL_ARCHIVED and CHANNEL_DELETED hear of it.</p>
<div class="scroll"><table><caption class="sr">Channels you can see</caption><thead><tr><th scope="col">Channel</th><th scope="col">Type</th><th scope="col">State</th><th scope="col">Actions</th></tr></thead><tbody>!${rows.join('')}</tbody></table></div></section>`;
}

/**
 * The fields of one group's form (`g` the group, or what a refused form held); `key` makes the ids unique on the page.
 */
function groupFields(key: string, g: Partial<ManagedGroup>, people: ManageView['people']): string {
  const id = (f: string) => `g-${key}-${f}`;
  const members = new Set(g.workspaceUserIds ?? []);
  const boxes = people
    .map(
      (p) =>
        html`<label class="check"><input type="checkbox" name="members" value="${p.id}"${members.has(p.id) ? ' checked' : ''}> ${p.name}</label>`,
    )
    .join('');
  return html`<label for="${id('name')}">Name</label><input type="text" id="${id('name')}" name="name" value="${g.name ?? ''}" required maxlength="80">
<label for="${id('handle')}">Handle</label><input type="text" id="${id('handle')}" name="handle" value="${g.handle ?? ''}" maxlength="80" aria-describedby="${id('handle-hint')}"><p class="muted" id="${id('handle-hint')}">Lower-case letters, digits, _ . or -; unique in the workspace.${key === 'new' ? ' Left empty: made from the name.' : ''}</p>
<label for="${id('description')}">Description</label><input type="text" id="${id('description')}" name="description" value="${g.description ?? ''}" maxlength="250">
<fieldset><legend>Members</legend>!${boxes || '<span class="muted">No users.</span>'}</fieldset>
<label class="check"><input type="checkbox" name="disabled" value="true"${g.disabled ? ' checked' : ''}> Disabled</label>`;
}

function groupsCard(shell: Shell, v: ManageView): string {
  const again = (key: string) => (v.again?.group === key ? v.again.fields : undefined);
  const items = v.groups.map((g) => {
    const shown = again(g.id) ?? g;
    return html`<li><details${again(g.id) ? ' open' : ''}><summary><strong>${g.name}</strong> @${g.handle} <span class="muted">!${g.workspaceUserIds.length} member${g.workspaceUserIds.length === 1 ? '' : 's'}${g.disabled ? ', disabled' : ''}</span></summary>
<form method="post" action="${MANAGE_PATH}/groups/${enc(g.id)}">!${csrfField(shell.csrf)}!${groupFields(g.id, shown, v.people)}<div class="row"><button type="submit" class="primary">Save ${g.name}</button></div></form></details></li>`;
  });
  return html`<section class="card" aria-labelledby="groups-title"><h2 id="groups-title">User groups</h2>
<p class="muted">Apps list them (GET /v1/workspaceUsers/groups) and hear WORKSPACE_USER_GROUP_CREATED and _UPDATED.</p>
!${items.length ? html`<ul class="plain">!${items.join('')}</ul>` : '<p class="muted">No groups yet.</p>'}
<h3>New group</h3><form method="post" action="${MANAGE_PATH}/groups">!${csrfField(shell.csrf)}!${groupFields('new', again('new') ?? {}, v.people)}<div class="row"><button type="submit" class="primary">Create group</button></div></form></section>`;
}

export function managePage(shell: Shell, v: ManageView): string {
  return consolePage(
    'Channels and groups',
    shell,
    html`<h1>Channels and groups</h1><p><a href="/console/channels">Back to the workspace</a></p>
!${v.notice ? html`<p class="ok" role="status">${v.notice}</p>` : ''}!${v.error ? html`<p class="error" role="alert">${v.error}</p>` : ''}
!${channelsCard(shell, v.channels)}!${groupsCard(shell, v)}`,
  );
}
