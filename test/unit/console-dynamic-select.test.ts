/**
 * A dynamic select as the console renders it (src/server/pages/console/block-elements.ts): a
 * combobox whose listbox the script fills with the app's options, and a hidden field that holds
 * the choice the form sends — the initial option shown and sent until another is chosen, a view's
 * state kept, and nothing to use where the element cannot be acted on.
 */
import t from 'tap';
import { actionElement, inputElement } from '../../src/server/pages/console/block-elements.js';

const plain = (text: string) => ({ type: 'plain_text', text });
const mood = {
  type: 'dynamic_select_menu',
  onAction: 'pick_mood',
  placeholder: plain('Your mood'),
  initial_option: { text: plain('Great'), value: 'great' },
};

t.test('in a message: a combobox that sends the choice at once', async (t) => {
  const out = actionElement(mood, { action: '/console/channels/c/messages/m/actions', csrf: 'tok', idPrefix: 'm' });
  const id = /<input type="text" id="([^"]+)" role="combobox"/.exec(out)?.[1];
  t.ok(id, 'a text field with the combobox role');
  t.match(out, new RegExp(`<label for="${id}" class="sr">Your mood</label>`), 'named by its placeholder');
  t.match(out, new RegExp(`aria-controls="${id}-list"`));
  t.match(out, new RegExp(`<ul role="listbox" id="${id}-list" class="listbox" aria-label="Your mood" hidden></ul>`));
  t.match(out, /value="Great" data-menu="pick_mood"/, 'the initial option’s label is shown');
  t.match(out, new RegExp(`<input type="hidden" id="${id}-v" name="v" value="great">`), 'and its value sent');
  t.match(out, new RegExp(`data-submit="${id}-go"`), 'a choice is sent at once');
  t.match(out, /&#34;type&#34;:&#34;DYNAMIC_SELECT_MENU&#34;/, 'sent as a dynamic select’s interaction');
  t.notMatch(out, /<select/, 'no select left to open empty');
});

t.test('in a view’s input block: the state is the hidden field, named for the view’s state', async (t) => {
  const el = { ...mood, initial_option: undefined };
  const state = { how: { pick_mood: { value: 'meh' } } };
  const out = inputElement('how', el, { csrf: 'tok', idPrefix: 'v' }, 'Mood', false, state, false);
  t.match(out, /<input type="hidden" id="[^"]+" name="s\.how\.pick_mood" value="meh">/);
  t.match(out, /role="combobox"[^>]* required/, 'required unless optional');
  t.match(out, /aria-label="Mood"/, 'the listbox is named by the block’s label');
});

t.test('where it cannot be used (a person’s message): disabled', async (t) => {
  const out = actionElement(mood, { csrf: 'tok', idPrefix: 'x' });
  t.match(out, /role="combobox"[^>]* disabled/);
  t.notMatch(out, /data-submit/);
});
