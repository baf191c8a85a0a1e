/**
 * A person's use of an app from the console. An interactive element's use is read from the console's form (see
 * pages/console/block-elements.ts): `act` names the element ({onAction, type, value?, from?, h?}),
 * `from` the field holding what was chosen. The result is what BLOCK_INTERACTION carries, in the
 * shape the SDK's apps read from its `payload`: `{value}` for a button, a select, a date or a
 * text, `{values}` for checkboxes (every box now ticked) and a date range (`[start, end]`).
 *
 * It is sent to the app (BLOCK_INTERACTION), what was chosen is kept so that pages show it again,
 * and the app's answer to it (or to a command or shortcut) is followed to the page it opens.
 */
import { invalidRequest } from '../../../errors.js';
import type { DeliveriesService, DeliveryRecord } from '../../../services/deliveries.js';
import type { Choice } from '../../../model/workspace.js';
import type { PersonState } from '../../person-state.js';
import type { Form, Signed } from './common.js';
import { must } from '../../../must.js';
import { recordOr } from '../../../unknown-values.js';

export interface Interaction {
  onAction: string;
  /**
   * BLOCK_INTERACTION's actionType: BUTTON, STATIC_SELECT_MENU, DYNAMIC_SELECT_MENU, CHECKBOXES, DATE_PICKER,
   * DATE_RANGE_PICKER, PLAIN_TEXT_INPUT.
   */
  actionType: string;
  value?: string;
  values?: string[];
  /** The element's key (what the person chose is kept for it, so the page shows it again). */
  key?: string;
}

const MAX_VALUE = 2000;
const MAX_VALUES = 100;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const isDate = (v: string) => DATE.test(v) && !Number.isNaN(Date.parse(`${v}T00:00:00Z`));

const listOf = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : v === undefined ? [] : [String(v)]);

/** The interaction a form sent; a malformed act or a missing choice is a clear 400. */
export function interactionOf(form: Form, where: 'message' | 'view' = 'message'): Interaction {
  const notOurs = () => invalidRequest(`The action is not one of this ${where}’s.`);
  let act: Record<string, unknown> | undefined;
  try {
    act = recordOr(JSON.parse(String(form.act ?? '')));
  } catch {
    throw notOurs();
  }
  if (!act || typeof act.onAction !== 'string' || typeof act.type !== 'string') throw notOurs();
  const base: Interaction = {
    onAction: act.onAction.slice(0, 200),
    actionType: act.type.slice(0, 40),
    ...(typeof act.h === 'string' ? { key: act.h.slice(0, 40) } : {}),
  };
  if (typeof act.from !== 'string') return { ...base, value: String(act.value ?? '').slice(0, MAX_VALUE) };
  const given = listOf(form[act.from]);
  if (given.length > MAX_VALUES || given.some((v) => v.length > MAX_VALUE))
    throw invalidRequest('Too much was chosen.');
  switch (base.actionType) {
    case 'CHECKBOXES':
      return { ...base, values: given.filter((v) => v !== '') };
    case 'DATE_RANGE_PICKER': {
      const [start = '', end = ''] = given;
      if (given.length !== 2 || !isDate(start) || !isDate(end)) throw invalidRequest('Choose both dates of the range.');
      if (end < start) throw invalidRequest('The range ends before it starts.');
      return { ...base, values: [start, end] };
    }
    case 'DATE_PICKER':
      if (given.length !== 1 || !isDate(must(given[0]))) throw invalidRequest('Choose a date first.');
      return { ...base, value: must(given[0]) };
    case 'PLAIN_TEXT_INPUT':
      return { ...base, value: given[0] ?? '' };
    default:
      if (!given[0]) throw invalidRequest('Choose an option first.');
      return { ...base, value: given[0] };
  }
}

/**
 * What the page keeps of an interaction to show again: the choice of a select, checkboxes, dates or a text (not a
 * button).
 */
function pickOf(i: Interaction): { value?: string; values?: string[] } | undefined {
  if (i.actionType === 'BUTTON' || !i.key) return undefined;
  return i.values ? { values: i.values } : { value: i.value ?? '' };
}

/** What the person chose in the elements of `source` (a message, a view), for the page to show again. */
export const pickedIn = (picks: Choice[], source: string) => (onAction: string, key: string) => {
  const p = picks.find((x) => x.source === source && x.onAction === onAction && x.key === key);
  return p && (p.values ? { values: p.values } : { value: p.value ?? '' });
};

/** Sending a person's uses of an app and following its answers. */
export function appInteractions(deliveries: Pick<DeliveriesService, 'interact' | 'appsFor'>, state: PersonState) {
  /** What the person sees of an app's answer (see PersonState.follow); the page to go to. */
  const follow = async (
    s: Signed,
    rec: DeliveryRecord,
    ctx: { channelId: string; returnTo: string; rootId?: string },
    closeOnAck = false,
  ) =>
    state.follow(
      s.principal.workspaceUserId,
      rec,
      String(
        (await deliveries.appsFor(s.principal)).find((a) => a.id === rec.appId)?.manifest.displayName ?? rec.appName,
      ),
      ctx,
      closeOnAck,
    );

  /**
   * A use of an element of the app's message or view: BLOCK_INTERACTION to the app; what was
   * chosen is kept first, so a page drawn while the app answers already shows it.
   */
  async function interactWith(
    s: Signed,
    appId: string,
    source: {
      sourceType: 'MESSAGE' | 'EPHEMERAL_MESSAGE' | 'VIEW';
      sourceId: string;
      channelId: string;
      view?: Record<string, unknown>;
    },
    i: Interaction,
  ): Promise<DeliveryRecord> {
    const pick = pickOf(i);
    if (pick)
      await state.pick(s.principal.workspaceUserId, {
        source: source.sourceId,
        onAction: i.onAction,
        key: must(i.key),
        ...pick,
      });
    return deliveries.interact(s.principal, appId, 'block-interaction', {
      ...source,
      onAction: i.onAction,
      actionType: i.actionType,
      ...(i.values ? { values: i.values } : { value: i.value ?? '' }),
    });
  }

  return { follow, interactWith };
}
