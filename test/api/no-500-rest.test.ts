/**
 * No input gives a 500: every other route: management, the token endpoint, the consent screen, login, fed by fast-check
 * (test/helpers/no-500.ts).
 */
import t from 'tap';
import { feedEveryRoute } from '../helpers/no-500.js';

t.test('every route of this part, fed values of the wrong type, missing and extra fields: never a 5xx', (t) =>
  feedEveryRoute(t, 'rest', [
    'POST /oauth2/access',
    'POST /workspaces/:workspaceId/workspaceUsers/:workspaceUserId/apps',
    'GET /access-request',
  ]),
);
