/**
 * A view's state read back from the view's form, in the shape the SDK reads
 * (docs/modals-views-reference.md, State; docs/blocks.md, Input Block):
 * `values[blockId][onAction] = {type, value}`, or `{type, values}` for checkboxes (every box
 * ticked, `[]` when none is) and a date range (`[start, end]`). Input blocks contribute, and a
 * section's accessory when it is an input block; an empty field, and a date range without both
 * of its dates, are left out (never `values: [""]`).
 */
import { must } from '../../../must.js';
import { fieldsOf as obj } from '../../../unknown-values.js';
import type { Form } from './common.js';
type Obj = Record<string, unknown>;

const isDate = (v: string) => /^\d{4}-\d{2}-\d{2}$/.test(v);

/** The input blocks of a view's blocks, a section's input-block accessory included. */
function inputBlocks(blocks: unknown): Obj[] {
  const out: Obj[] = [];
  for (const raw of Array.isArray(blocks) ? blocks : []) {
    const b = obj(raw);
    if (b.type === 'input') out.push(b);
    else if (b.type === 'section' && obj(b.accessory).type === 'input') out.push(obj(b.accessory));
  }
  return out;
}

export function stateOf(view: Obj, form: Form): { values: Record<string, Record<string, Obj>> } {
  const values: Record<string, Record<string, Obj>> = {};
  for (const b of inputBlocks(view.blocks)) {
    const blockId = String(b.blockId ?? b.block_id ?? '');
    const el = obj(b.element);
    const type = String(el.type ?? 'plain_text_input');
    if (type === 'button') continue;
    const onAction = String(el.onAction ?? el.action_id ?? '');
    const given = form[`s.${blockId}.${onAction}`];
    const list = (Array.isArray(given) ? given : given === undefined ? [] : [given]).map(String);
    let entry: Obj | undefined;
    if (type === 'checkboxes') entry = { type, values: list.filter((v) => v !== '') };
    else if (type === 'date_range_picker') {
      if (list.length === 2 && isDate(must(list[0])) && isDate(must(list[1]))) entry = { type, values: list };
    } else if (typeof given === 'string' && given !== '') entry = { type, value: given };
    if (entry) (values[blockId] ??= {})[onAction] = entry;
  }
  return { values };
}
