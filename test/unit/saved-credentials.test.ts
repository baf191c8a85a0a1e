/**
 * The logins `appreg login` saves (credentials.json in the user's config dir) are read back checked: an entry that
 * holds no credentials (a file edited by hand) is left out instead of being sent as a login without a token.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { readSaved } from '../../src/client/credentials.js';

t.test('saved logins: entries with credentials are read, the others are left out', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-saved-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const good = { workspaceId: 'ws_1', workspaceUserId: 'wu_1', authToken: 'awt_x', email: 'a@example.com' };
  fs.writeFileSync(
    path.join(dir, 'credentials.json'),
    JSON.stringify({
      'http://127.0.0.1:1': good,
      'http://127.0.0.1:2': { workspaceId: 'ws_1', workspaceUserId: 'wu_1' },
      'http://127.0.0.1:3': 'not an object',
    }),
  );
  t.same(readSaved({ env: { APPREG_CONFIG_DIR: dir } }), { 'http://127.0.0.1:1': good });
  fs.writeFileSync(path.join(dir, 'credentials.json'), '[1, 2]');
  t.same(readSaved({ env: { APPREG_CONFIG_DIR: dir } }), {}, 'a file that holds no object: no logins');
});
