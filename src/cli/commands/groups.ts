/** appreg groups list|create|update: the workspace's user groups, as a person makes them (docs/protocol.md §2.8). */
import type { Command } from 'commander';
import { table } from '../output.js';
import { CliError, EXIT } from '../../client/exit.js';
import { action, examples } from '../options.js';
import type { Client } from '../../client/daemon-client.js';
import type { Run } from '../run.js';
import { must } from '../../must.js';

interface Group {
  id: string;
  name: string;
  handle: string;
  description: string;
  disabled: boolean;
  createdBy: string;
  workspaceUserIds: string[];
}

/** `a,b, c` → ['a', 'b', 'c']. */
const ids = (v: unknown) =>
  String(v)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** A group by id, handle or @handle, among the workspace's; exit 4 when there is none. */
async function groupOf(client: Client, which: string): Promise<Group> {
  const list = await client.request<Group[]>('GET', `${client.base()}/groups`);
  const handle = which.replace(/^@/, '');
  const found = list.find((g) => g.id === which) ?? list.find((g) => g.handle === handle);
  if (!found)
    throw new CliError(`no group ${which} in your workspace (appreg groups list shows them)`, EXIT.rejected, {
      code: 'not_found',
      message: `no group ${which}`,
    });
  return found;
}

const describe = (g: Group) =>
  `${g.name} @${g.handle} (${g.id}): ${g.workspaceUserIds.length} member${g.workspaceUserIds.length === 1 ? '' : 's'}${g.disabled ? ', disabled' : ''}`;

export function registerGroups(program: Command, run: Run): void {
  const groups = program
    .command('groups')
    .description('user groups of your workspace; apps list them and hear WORKSPACE_USER_GROUP_CREATED / _UPDATED');
  groups
    .command('list')
    .description('the groups of your workspace, oldest first')
    .addHelpText('after', examples('appreg groups list', 'appreg groups list --json'))
    .action(
      action(run, async ({ out, client: connect }) => {
        const client = connect();
        const list = await client.request<Group[]>('GET', `${client.base()}/groups`);
        out.print(list, (c) =>
          table(
            c,
            ['ID', 'HANDLE', 'NAME', 'MEMBERS', 'STATE', 'DESCRIPTION'],
            list.map((g) => [
              g.id,
              `@${g.handle}`,
              g.name,
              String(g.workspaceUserIds.length),
              g.disabled ? 'disabled' : 'active',
              g.description,
            ]),
          ),
        );
      }),
    );
  groups
    .command('create <name>')
    .description('create a group; its handle defaults to the name in lower case with - between words')
    .option('--handle <handle>', 'unique handle: lower-case letters, digits, _ . or -')
    .option('--description <text>', 'what the group is for (at most 250 characters)')
    .option('--members <ids>', 'comma-separated workspace user ids')
    .addHelpText(
      'after',
      examples(
        'appreg groups create "On call" --members wu_1,wu_2',
        'appreg groups create Reviewers --handle reviewers --description "code review" --json',
      ),
    )
    .action(
      action(run, async ({ o, out, client: connect }, name) => {
        const client = connect();
        const body: Record<string, unknown> = { name };
        if (o.handle !== undefined) body.handle = String(o.handle).replace(/^@/, '');
        if (o.description !== undefined) body.description = String(o.description);
        if (o.members !== undefined) body.workspaceUserIds = ids(o.members);
        const g = await client.request<Group>('POST', `${client.base()}/groups`, { json: body });
        out.print(g, () => `created ${describe(g)}`);
      }),
    );
  groups
    .command('update <group>')
    .description('change a group (by id, handle or @handle): what is not given stays')
    .option('--name <name>', 'new name')
    .option('--handle <handle>', 'new handle')
    .option('--description <text>', 'new description')
    .option('--members <ids>', 'comma-separated workspace user ids: the members from now on')
    .option('--add <ids>', 'comma-separated workspace user ids to add')
    .option('--remove <ids>', 'comma-separated workspace user ids to remove')
    .option('--disable', 'disable the group')
    .option('--enable', 'enable the group again')
    .addHelpText(
      'after',
      examples(
        'appreg groups update @on-call --add wu_3',
        'appreg groups update grp_123 --name "Night shift" --disable --json',
      ),
    )
    .action(
      action(run, async ({ o, out, client: connect }, which) => {
        if (o.disable && o.enable) throw new CliError('--disable and --enable cannot be used together', EXIT.usage);
        if (o.members !== undefined && (o.add !== undefined || o.remove !== undefined))
          throw new CliError('--members replaces the members: use it without --add and --remove', EXIT.usage);
        const body: Record<string, unknown> = {};
        if (o.name !== undefined) body.name = String(o.name);
        if (o.handle !== undefined) body.handle = String(o.handle).replace(/^@/, '');
        if (o.description !== undefined) body.description = String(o.description);
        if (o.disable) body.disabled = true;
        if (o.enable) body.disabled = false;
        if (o.members !== undefined) body.workspaceUserIds = ids(o.members);
        const client = connect();
        const g = await groupOf(client, must(which));
        if (o.add !== undefined || o.remove !== undefined) {
          const gone = new Set(o.remove === undefined ? [] : ids(o.remove));
          body.workspaceUserIds = [
            ...new Set([...g.workspaceUserIds, ...(o.add === undefined ? [] : ids(o.add))]),
          ].filter((id) => !gone.has(id));
        }
        if (!Object.keys(body).length)
          throw new CliError(
            'nothing to change: give --name, --handle, --description, --members, --add, --remove, --disable or --enable',
            EXIT.usage,
          );
        const updated = await client.request<Group>('PATCH', `${client.base()}/groups/${encodeURIComponent(g.id)}`, {
          json: body,
        });
        out.print(updated, () => `updated ${describe(updated)}`);
      }),
    );
}
