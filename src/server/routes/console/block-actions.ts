/**
 * A use of an interactive element, read from the console's form (see
 * pages/console/block-elements.ts): `act` names the element ({onAction, type, value?, from?, h?}),
 * `from` the field holding what was chosen. The result is what BLOCK_INTERACTION carries, in the
 * shape the SDK's apps read from its `payload`: `{value}` for a button, a select, a date or a
 * text, `{values}` for checkboxes (every box now ticked) and a date range (`[start, end]`).
 */
import { invalidRequest } from '../../../errors.js';

export interface Interaction {
  onAction: string;
  /** BLOCK_INTERACTION's actionType: BUTTON, STATIC_SELECT_MENU, DYNAMIC_SELECT_MENU, CHECKBOXES, DATE_PICKER, DATE_RANGE_PICKER, PLAIN_TEXT_INPUT. */
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
export function interactionOf(form: Record<string, unknown>, where: 'message' | 'view' = 'message'): Interaction {
  const notOurs = () => invalidRequest(`The action is not one of this ${where}’s.`);
  let act: Record<string, unknown>;
  try {
    act = JSON.parse(String(form.act ?? '')) as Record<string, unknown>;
  } catch {
    throw notOurs();
  }
  if (!act || typeof act.onAction !== 'string' || typeof act.type !== 'string') throw notOurs();
  const base: Interaction = { onAction: act.onAction.slice(0, 200), actionType: act.type.slice(0, 40), ...(typeof act.h === 'string' ? { key: act.h.slice(0, 40) } : {}) };
  if (typeof act.from !== 'string') return { ...base, value: String(act.value ?? '').slice(0, MAX_VALUE) };
  const given = listOf(form[act.from]);
  if (given.length > MAX_VALUES || given.some((v) => v.length > MAX_VALUE)) throw invalidRequest('Too much was chosen.');
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
      if (given.length !== 1 || !isDate(given[0]!)) throw invalidRequest('Choose a date first.');
      return { ...base, value: given[0]! };
    case 'PLAIN_TEXT_INPUT':
      return { ...base, value: given[0] ?? '' };
    default:
      if (!given[0]) throw invalidRequest('Choose an option first.');
      return { ...base, value: given[0] };
  }
}

/** What the page keeps of an interaction to show again: the choice of a select, checkboxes, dates or a text (not a button). */
export function pickOf(i: Interaction): { value?: string; values?: string[] } | undefined {
  if (i.actionType === 'BUTTON' || !i.key) return undefined;
  return i.values ? { values: i.values } : { value: i.value ?? '' };
}
