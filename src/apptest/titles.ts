/** A step in a few words, for reports: its `name`, else what it does as written (references unresolved). */
import { listOf } from './match.js';
import type { Step } from './suite.js';

const q = (v: unknown) => (typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v));
const cut = (s: string, n = 120) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

export function stepTitle(s: Step): string {
  if (typeof s.name === 'string') return s.name;
  const as = typeof s.as === 'string' && s.as !== 'owner' ? ` as ${s.as}` : '';
  const on =
    typeof s.message === 'string'
      ? ` on ${s.message}`
      : s.modal === true
        ? ' in the modal'
        : s.home === true
          ? ' in the home view'
          : '';
  if (s.say !== undefined)
    return cut(
      `say ${String(s.say)}${s.thread ? ` in the thread of ${String(s.thread)}` : ''}${s.channel ? ` in ${String(s.channel)}` : ''}${as}`,
    );
  if (s.click !== undefined)
    return `click ${typeof s.click === 'string' ? q(s.click) : `onAction ${String((s.click as { onAction?: unknown }).onAction)}`}${on}${as}`;
  if (s.select !== undefined)
    return `select ${listOf(s.select).map(q).join(', ')}${s.in ? ` in ${String(s.in)}` : ''}${on}${as}`;
  if (s.date !== undefined) return `date ${listOf(s.date).join(' to ')}${s.in ? ` in ${String(s.in)}` : ''}${on}${as}`;
  if (s.enter !== undefined) return cut(`enter ${q(s.enter)}${s.in ? ` in ${String(s.in)}` : ''}${on}${as}`);
  if (s.submit !== undefined)
    return cut(
      `submit the modal${
        Object.keys(s.submit as object).length
          ? ` with ${Object.entries(s.submit as Record<string, unknown>)
              .map(([k, v]) => `${k}: ${q(v)}`)
              .join(', ')}`
          : ''
      }${as}`,
    );
  if (s.close !== undefined) return `close the modal${as}`;
  if (s.shortcut !== undefined) return `shortcut ${String(s.shortcut)}${on}${as}`;
  if (s.menu !== undefined) return `menu ${String(s.menu)}${s.query !== undefined ? ` typing ${q(s.query)}` : ''}${as}`;
  if (s.event !== undefined) return `event ${String(s.event)}${s.body ? ' (own body)' : ''}`;
  if (s.react !== undefined) return `react ${String(s.react)}${on}${as}`;
  const parts = [`expect ${String(s.expect)}`];
  if (s.type !== undefined) parts.push(String(s.type));
  if (s.kind !== undefined) parts.push(`(${String(s.kind)})`);
  if (s.text !== undefined) parts.push(q(s.text));
  if (s.title !== undefined) parts.push(`titled ${q(s.title)}`);
  if (s.buttons !== undefined) parts.push(`with buttons ${listOf(s.buttons).join(', ')}`);
  if (s.inputs !== undefined) parts.push(`with inputs ${listOf(s.inputs).map(q).join(', ')}`);
  if (s.options !== undefined) parts.push(`exactly ${listOf(s.options).map(q).join(', ')}`);
  if (s.includes !== undefined) parts.push(`including ${listOf(s.includes).map(q).join(', ')}`);
  if (s.code !== undefined) parts.push(String(s.code));
  if (s.thread === true) parts.push('in a thread');
  else if (typeof s.thread === 'string') parts.push(`in the thread of ${s.thread}`);
  if (s.ephemeralTo !== undefined) parts.push(`only to ${String(s.ephemeralTo)}`);
  if (typeof s.message === 'string') parts.push(`of ${s.message}`);
  return cut(parts.join(' '));
}
