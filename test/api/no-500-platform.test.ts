/**
 * No input gives a 500: the platform API (/v1, /oauth2/me, the file routes), fed by fast-check
 * (test/helpers/no-500.ts).
 */
import t from 'tap';
import { feedEveryRoute } from '../helpers/no-500.js';

t.test('every route of this part, fed values of the wrong type, missing and extra fields: never a 5xx', (t) =>
  feedEveryRoute(t, 'platform', ['POST /v1/messages/search', 'POST /v1/channels/:channelId/messages']),
);
