/** What a message's text and blocks mention, before anything is looked up (NEW_MESSAGE's md, mc, mu). */
import t from 'tap';
import { mentionMarks } from '../../src/services/workspace/mentions.js';
import type { Json } from '../../src/model/json.js';

t.test('mentions in the text, the platform’s way', async (t) => {
  t.same(mentionMarks('hi <<@wu_a>> and <<@wu_b>>, again <<@wu_a>>', []), {
    users: ['wu_a', 'wu_b'],
    groups: [],
    broadcast: false,
  });
  t.same(mentionMarks('<<&grp_1>> <<#ch_1>> <<@here>>', []), { users: [], groups: ['grp_1'], broadcast: true });
  t.same(mentionMarks('<<@channel>>', []).broadcast, true);
  t.same(mentionMarks('<@wu_a> <<@ wu_a>> << @wu_a >> @wu_a', []), { users: [], groups: [], broadcast: false });
});

t.test('mentions in rich-text blocks, however nested, after those of the text', async (t) => {
  const blocks: Json[] = [
    {
      type: 'rich_text',
      elements: [
        {
          type: 'rich_text_section',
          elements: [
            { type: 'text', text: 'x' },
            { type: 'user', user_id: 'wu_b' },
          ],
        },
        {
          type: 'rich_text_list',
          elements: [{ type: 'rich_text_section', elements: [{ type: 'usergroup', usergroup_id: 'grp_2' }] }],
        },
        {
          type: 'rich_text_quote',
          elements: [
            { type: 'broadcast', range: 'here' },
            { type: 'user', user_id: 'wu_c' },
          ],
        },
      ],
    },
  ];
  t.same(mentionMarks('<<@wu_a>>', blocks), { users: ['wu_a', 'wu_b', 'wu_c'], groups: ['grp_2'], broadcast: true });
  t.same(mentionMarks('', [{ type: 'user' }, { type: 'broadcast', range: 'everyone' }, null, 'x']), {
    users: [],
    groups: [],
    broadcast: false,
  });
});
