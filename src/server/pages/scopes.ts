/** Plain-language descriptions of the known scopes (docs/protocol.md §8) for the consent screen. */
const DESCRIPTIONS: Record<string, string> = {
  'messages:read': 'Read messages in channels and conversations',
  'messages:write': 'Send messages',
  'messages:edit': 'Edit messages',
  'messages:delete': 'Delete messages',
  'attachments:write': 'Add attachments to messages',
  'user:read': 'See people in the workspace and their profiles',
  'status:write': 'Set the status',
  'reaction:read': 'See reactions to messages',
  'reaction:write': 'Add and remove reactions',
  'channels:list': 'List channels',
  'channels:read': 'See channels and their details',
  'channels:write': 'Create and manage channels',
  'users:list': 'List the people in the workspace',
  'workspace:read': 'See the workspace details',
  'calls:write': 'Start and manage calls',
  'files:write': 'Upload files',
  'group:read': 'See user groups',
};

export function describeScope(scope: string): string {
  return DESCRIPTIONS[scope] ?? `Use the "${scope}" permission`;
}
