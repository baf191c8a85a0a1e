/** No input gives a 500: the console and its sign-in links, fed by fast-check (test/helpers/no-500.ts). */
import t from 'tap';
import { feedEveryRoute } from '../helpers/no-500.js';

t.test('every route of this part, fed values of the wrong type, missing and extra fields: never a 5xx', (t) =>
  feedEveryRoute(t, 'console', [
    'POST /console/channels/:channelId/messages',
    'POST /console/apps',
    'GET /web/sign-in',
  ]),
);
