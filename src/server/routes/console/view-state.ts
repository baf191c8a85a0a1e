/**
 * A view's state read back from the modal's form, in the shape the SDK reads
 * (docs/modals-views-reference.md, State): `values[blockId][onAction] = {type, value}`, or
 * `{type, values}` for checkboxes. Only input blocks contribute; an empty field is left out.
 */
type Obj = Record<string, unknown>;

const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

export function stateOf(view: Obj, form: Obj): { values: Record<string, Record<string, Obj>> } {
  const values: Record<string, Record<string, Obj>> = {};
  for (const raw of Array.isArray(view.blocks) ? view.blocks : []) {
    const b = obj(raw);
    if (b.type !== 'input') continue;
    const blockId = String(b.blockId ?? b.block_id ?? '');
    const el = obj(b.element);
    const onAction = String(el.onAction ?? el.action_id ?? '');
    const given = form[`s.${blockId}.${onAction}`];
    const type = String(el.type ?? 'plain_text_input');
    let entry: Obj | undefined;
    if (type === 'checkboxes' || type === 'date_range_picker') {
      const list = (Array.isArray(given) ? given : given === undefined ? [] : [given]).map(String);
      if (list.length) entry = { type, values: list };
    } else if (typeof given === 'string' && given !== '') entry = { type, value: given };
    if (entry) (values[blockId] ??= {})[onAction] = entry;
  }
  return { values };
}
