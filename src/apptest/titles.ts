/** A step in a few words, for reports: its `name`, else what it does as written (references unresolved). */
import { listOf } from './match.js';
import { recordOr } from '../unknown-values.js';
import type { ActionStep, ExpectStep, Resolved, Step } from './steps.js';

const q = (v: unknown) => (typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v));
const cut = (s: string, n = 120) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

export function stepTitle(s: Resolved<Step>): string {
  if (typeof s.name === 'string') return s.name;
  return 'expect' in s ? expectationTitle(s) : actionTitle(s);
}

function actionTitle(s: Resolved<ActionStep>): string {
  if ('event' in s) return `event ${String(s.event)}${s.body ? ' (own body)' : ''}`;
  const as = typeof s.as === 'string' && s.as !== 'owner' ? ` as ${s.as}` : '';
  const on =
    'message' in s && typeof s.message === 'string'
      ? ` on ${s.message}`
      : 'modal' in s && s.modal === true
        ? ' in the modal'
        : 'home' in s && s.home === true
          ? ' in the home view'
          : '';
  if ('say' in s)
    return cut(
      `say ${String(s.say)}${s.thread ? ` in the thread of ${String(s.thread)}` : ''}${s.channel ? ` in ${String(s.channel)}` : ''}${as}`,
    );
  if ('click' in s)
    return `click ${typeof s.click === 'string' ? q(s.click) : `onAction ${String(recordOr(s.click)?.onAction)}`}${on}${as}`;
  if ('select' in s)
    return `select ${listOf(s.select).map(q).join(', ')}${s.in ? ` in ${String(s.in)}` : ''}${on}${as}`;
  if ('date' in s) return `date ${listOf(s.date).join(' to ')}${s.in ? ` in ${String(s.in)}` : ''}${on}${as}`;
  if ('enter' in s) return cut(`enter ${q(s.enter)}${s.in ? ` in ${String(s.in)}` : ''}${on}${as}`);
  if ('submit' in s)
    return cut(
      `submit the modal${
        Object.keys(s.submit).length
          ? ` with ${Object.entries(s.submit)
              .map(([k, v]) => `${k}: ${q(v)}`)
              .join(', ')}`
          : ''
      }${as}`,
    );
  if ('close' in s) return `close the modal${as}`;
  if ('shortcut' in s) return `shortcut ${String(s.shortcut)}${on}${as}`;
  if ('menu' in s) return `menu ${String(s.menu)}${s.query !== undefined ? ` typing ${q(s.query)}` : ''}${as}`;
  return `react ${String(s.react)}${on}${as}`;
}

function expectationTitle(s: Resolved<ExpectStep>): string {
  const parts = [`expect ${s.expect}`];
  if ('type' in s) parts.push(String(s.type));
  if ('kind' in s && s.kind !== undefined) parts.push(`(${String(s.kind)})`);
  if ('text' in s && s.text !== undefined) parts.push(q(s.text));
  if ('title' in s && s.title !== undefined) parts.push(`titled ${q(s.title)}`);
  if ('buttons' in s && s.buttons !== undefined) parts.push(`with buttons ${listOf(s.buttons).join(', ')}`);
  if ('inputs' in s && s.inputs !== undefined) parts.push(`with inputs ${listOf(s.inputs).map(q).join(', ')}`);
  if ('options' in s && s.options !== undefined) parts.push(`exactly ${listOf(s.options).map(q).join(', ')}`);
  if ('includes' in s && s.includes !== undefined) parts.push(`including ${listOf(s.includes).map(q).join(', ')}`);
  if ('code' in s && s.code !== undefined) parts.push(String(s.code));
  if ('thread' in s) {
    if (s.thread === true) parts.push('in a thread');
    else if (typeof s.thread === 'string') parts.push(`in the thread of ${s.thread}`);
  }
  if ('ephemeralTo' in s && s.ephemeralTo !== undefined) parts.push(`only to ${String(s.ephemeralTo)}`);
  if ('message' in s && typeof s.message === 'string') parts.push(`of ${s.message}`);
  return cut(parts.join(' '));
}
