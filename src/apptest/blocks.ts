/**
 * What a suite's steps find in an app's blocks (the SDK's blocks and views, as the console renders
 * them): buttons by label or onAction, selects and their options, a modal's inputs by label,
 * blockId or onAction, and the view state a filled modal is submitted with
 * (`values[blockId][onAction] = {type, value}` or `{type, values}`, docs/protocol.md §5.2).
 */
import { must } from '../must.js';
import { stringOr, fieldsOf as obj, itemsOf as arr } from '../unknown-values.js';
type Obj = Record<string, unknown>;
/** A text object ({type, text}) or a string. */
export const textOf = (v: unknown): string => (typeof v === 'string' ? v : (stringOr(obj(v).text) ?? ''));

export interface Element {
  type: string;
  onAction: string;
  el: Obj;
  /** An input block's label and blockId (in views). */
  label?: string;
  blockId?: string;
}
export interface Option {
  label: string;
  value: string;
}

/** Every interactive element of these blocks: actions blocks, section accessories, input blocks. */
export function elementsOf(blocks: unknown): Element[] {
  const out: Element[] = [];
  const add = (raw: unknown, extra: Partial<Element> = {}) => {
    const el = obj(raw);
    if (typeof el.type !== 'string') return;
    out.push({ type: el.type, onAction: String(el.onAction ?? el.action_id ?? ''), el, ...extra });
  };
  for (const raw of arr(blocks)) {
    const b = obj(raw);
    if (b.type === 'actions') arr(b.elements).forEach((e) => add(e));
    else if (b.type === 'section' && b.accessory) {
      const acc = obj(b.accessory);
      if (acc.type === 'input')
        add(acc.element, { label: textOf(acc.label), blockId: String(acc.blockId ?? acc.block_id ?? '') });
      else add(acc);
    } else if (b.type === 'input')
      add(b.element, { label: textOf(b.label), blockId: String(b.blockId ?? b.block_id ?? '') });
  }
  return out;
}

export const isSelect = (e: Element) =>
  e.type === 'static_select_menu' || e.type === 'dynamic_select_menu' || e.type === 'checkboxes';

/** The buttons' labels, for "the message has buttons …" and for saying what a message offers. */
export const buttonLabels = (blocks: unknown): string[] =>
  elementsOf(blocks)
    .filter((e) => e.type === 'button')
    .map((e) => textOf(e.el.text));

/** A select's (or checkbox group's) own options, groups included; a dynamic select has none until the app answers. */
export function optionsOf(el: Obj): Option[] {
  const one = (o: unknown): Option => ({ label: textOf(obj(o).text), value: String(obj(o).value ?? '') });
  const groups = arr(el.option_groups ?? el.optionGroups).flatMap((g) => arr(obj(g).options).map(one));
  return [...arr(el.options).map(one), ...groups];
}

/** The option a step names, by its label or its value. */
export const optionNamed = (
  opts: Option[],
  name: string,
  test: (s: string) => boolean = (s) => s === name,
): Option | undefined => opts.find((o) => test(o.label)) ?? opts.find((o) => o.value === name);

/** BLOCK_INTERACTION's actionType for an element: its type in capitals. */
export const actionTypeOf = (e: Element) => e.type.toUpperCase();

/** A view's title. */
export const titleOf = (view: Obj): string => textOf(view.title);

/** The inputs of a view (input blocks, and a section's input accessory). */
export const inputsOf = (view: Obj): Element[] =>
  elementsOf(view.blocks).filter((e) => e.blockId !== undefined && e.type !== 'button');

/** Whether an input is the one `name` means: its label, its blockId or its onAction. */
export const inputNamed = (e: Element, name: string) =>
  e.label?.trim() === name.trim() || e.blockId === name || e.onAction === name;

/** How an input is named in messages: its label, else its blockId. */
export const inputName = (e: Element) => e.label || e.blockId || e.onAction;

/**
 * The state of `view` with `fields` filled in (by label, blockId or onAction): text as it is, a
 * select's option by label or value, checkboxes as a list. Fields that name no input, and values
 * that name no option, are returned as problems.
 */
export function stateFor(
  view: Obj,
  fields: Record<string, unknown>,
): { state: { values: Record<string, Record<string, Obj>> }; problems: string[] } {
  const values: Record<string, Record<string, Obj>> = {};
  const problems: string[] = [];
  const inputs = inputsOf(view);
  for (const [name, given] of Object.entries(fields)) {
    const input = inputs.find((e) => inputNamed(e, name));
    if (!input) {
      problems.push(
        `the modal has no input ${JSON.stringify(name)} (it has ${inputs.map((e) => JSON.stringify(inputName(e))).join(', ') || 'none'})`,
      );
      continue;
    }
    const list = (Array.isArray(given) ? given : [given]).map(String);
    let entry: Obj;
    if (input.type === 'static_select_menu' || input.type === 'checkboxes') {
      const opts = optionsOf(input.el);
      const picked = list.map((v) => optionNamed(opts, v));
      const missing = list.filter((_v, i) => !picked[i]);
      if (missing.length) {
        problems.push(
          `${JSON.stringify(inputName(input))} has no option ${missing.map((v) => JSON.stringify(v)).join(', ')} (it has ${opts.map((o) => JSON.stringify(o.label)).join(', ') || 'none'})`,
        );
        continue;
      }
      entry =
        input.type === 'checkboxes'
          ? { type: input.type, values: picked.map((o) => must(o).value) }
          : { type: input.type, value: must(picked[0]).value };
    } else if (input.type === 'date_range_picker') entry = { type: input.type, values: list.slice(0, 2) };
    else entry = { type: input.type, value: list.join('\n') };
    (values[must(input.blockId)] ??= {})[input.onAction] = entry;
  }
  return { state: { values }, problems };
}
