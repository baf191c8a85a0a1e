/**
 * The bodies the daemon sends to an app (docs/protocol.md §5), one builder per kind,
 * and the manifest URL each kind goes to. A trigger that names something the app's
 * manifest does not have is refused with a clear invalid_request.
 */
import { newId } from '../crypto.js';
import { invalidRequest } from '../errors.js';
import type { AppRecord } from '../model/identity.js';
import { initialChannelId } from '../model/workspace.js';
import { testEventBody } from './test-event-bodies.js';
import { EVENT_SCOPES } from '../validation/manifest.js';
import type { DeliveryKind } from '../model/delivery.js';
import { recordOr } from '../unknown-values.js';

const triggerBase = newId('trg', 9);
let triggerCount = 0;
const nextTriggerId = () => `${triggerBase}${(triggerCount++).toString(36)}`;

export const KINDS: readonly DeliveryKind[] = [
  'slash-command',
  'global-shortcut',
  'message-shortcut',
  'block-interaction',
  'view-action',
  'dynamic-menu',
  'event',
];
const APP_EVENTS = new Set(['APP_UNINSTALLED', 'APP_UNAUTHORIZED']);
/** The onAction of a test block interaction when none is named. */
export const TEST_ON_ACTION = 'test_action';

/** What a trigger may say, per kind (all optional; sensible test values are filled in). */
export interface TriggerFields {
  command?: string;
  text?: string;
  channelId?: string;
  threadRootId?: string;
  shortcut?: string;
  messageId?: string;
  onAction?: string;
  actionType?: string;
  value?: string;
  /** Checkboxes and date ranges: BLOCK_INTERACTION's payload is `{values}` instead of `{value}`. */
  values?: string[];
  query?: string;
  sourceType?: 'VIEW' | 'MESSAGE' | 'EPHEMERAL_MESSAGE';
  sourceId?: string;
  view?: Record<string, unknown>;
  viewActionType?: 'SUBMIT' | 'CLOSE';
  event?: string;
  body?: unknown;
  /** Replaces the built body entirely (deliver-test --payload); messageType still selects the kind. */
  payload?: Record<string, unknown>;
}

export interface Built {
  url?: string;
  payload: Record<string, unknown>;
  interactive: boolean;
}

const str = (v: unknown, name: string): string | undefined => {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw invalidRequest(`${name} must be a string.`);
  return v;
};
const strs = (v: unknown, name: string): string[] | undefined => {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length > 100 || !v.every((x): x is string => typeof x === 'string'))
    throw invalidRequest(`${name} must be an array of at most 100 strings.`);
  return v;
};

/**
 * What a BLOCK_INTERACTION's `payload` (a JSON string) says: `{values}` for checkboxes and date ranges, else `{value}`.
 */
function interactionPayload(f: TriggerFields): string {
  const values = strs(f.values, 'values');
  return JSON.stringify(values ? { values } : { value: str(f.value, 'value') ?? '' });
}

function defaultView(callbackId = 'test_view'): Record<string, unknown> {
  return {
    id: newId('view', 8),
    type: 'MODAL',
    callbackId,
    title: { type: 'plain_text', text: 'Test' },
    blocks: [],
    state: { values: {} },
  };
}

/**
 * The workspace's general channel, the default `channelId` of a trigger: its id is a hash, so the last workspace's is
 * kept (a daemon serves one workspace, or a few; a hash per trigger was 2 % of a delivery's CPU).
 */
let generalOf = { workspaceId: '', channelId: '' };
function generalChannelId(workspaceId: string): string {
  if (generalOf.workspaceId !== workspaceId)
    generalOf = { workspaceId, channelId: initialChannelId(workspaceId, 'general') };
  return generalOf.channelId;
}

/**
 * Build the body of one trigger for `app`, as `userId` in `workspaceId`; `now` (the daemon's clock) stamps an example
 * event.
 */
export function buildPayload(
  kind: DeliveryKind,
  app: AppRecord,
  who: { workspaceId: string; userId: string; workspaceUserIds?: string[] },
  f: TriggerFields,
  now: number,
): Built {
  const m = app.manifest;
  const base = { workspaceId: who.workspaceId, userId: who.userId };
  // by default the workspace's general channel, so an app that answers with ctx.say() posts somewhere real
  const channelId = str(f.channelId, 'channelId') ?? generalChannelId(who.workspaceId);
  const triggerId = nextTriggerId();
  const override = (built: Built): Built => (f.payload ? { ...built, payload: f.payload } : built);
  switch (kind) {
    case 'slash-command': {
      const cmds = m.slashCommands ?? [];
      const name = str(f.command, 'command') ?? cmds[0]?.command;
      const cmd = cmds.find((c) => c.command === name);
      if (!cmd)
        throw invalidRequest(
          name
            ? `The app has no slash command ${name} (it has: ${cmds.map((c) => c.command).join(', ') || 'none'}).`
            : 'The app has no slash commands.',
        );
      // literals in the order sent, not spreads (a clone per spread on Node 20; the commonest trigger)
      const text = str(f.text, 'text') ?? '';
      const { workspaceId, userId } = base;
      const payload: Record<string, unknown> = f.threadRootId
        ? {
            messageType: 'SLASH_COMMAND',
            slashCommand: cmd.command,
            text,
            workspaceId,
            userId,
            channelId,
            threadRootId: str(f.threadRootId, 'threadRootId'),
            triggerId,
          }
        : { messageType: 'SLASH_COMMAND', slashCommand: cmd.command, text, workspaceId, userId, channelId, triggerId };
      return override({ url: cmd.url, interactive: true, payload });
    }
    case 'global-shortcut':
    case 'message-shortcut': {
      const type = kind === 'global-shortcut' ? 'GLOBAL' : 'ON_MESSAGE';
      const list = (m.shortcuts ?? []).filter((s) => s.shortcutType === type);
      const name = str(f.shortcut, 'shortcut') ?? list[0]?.name;
      const sc = list.find((s) => s.name === name);
      if (!sc)
        throw invalidRequest(
          name
            ? `The app has no ${type} shortcut named ${name} (it has: ${list.map((s) => s.name).join(', ') || 'none'}).`
            : `The app has no ${type} shortcuts.`,
        );
      const payload: Record<string, unknown> = {
        messageType: 'SHORTCUT',
        type,
        shortcut: sc.name,
        ...base,
        channelId,
        triggerId,
      };
      if (type === 'ON_MESSAGE') payload.messageId = str(f.messageId, 'messageId') ?? newId('msg', 12);
      return override({ url: sc.url, interactive: true, payload });
    }
    case 'block-interaction': {
      if (!m.blockInteraction?.url) throw invalidRequest('The app has no blockInteraction URL in its manifest.');
      const sourceType = f.sourceType ?? 'MESSAGE';
      if (!['VIEW', 'MESSAGE', 'EPHEMERAL_MESSAGE'].includes(sourceType))
        throw invalidRequest('sourceType must be VIEW, MESSAGE or EPHEMERAL_MESSAGE.');
      const onAction = str(f.onAction, 'onAction') ?? TEST_ON_ACTION;
      // on a view, the source is the view: its id (given, or the view's own)
      const view = sourceType === 'VIEW' ? { ...(f.view ?? defaultView()) } : undefined;
      if (view && view.id === undefined) view.id = str(f.sourceId, 'sourceId') ?? newId('view', 8);
      const payload: Record<string, unknown> = {
        messageType: 'BLOCK_INTERACTION',
        ...base,
        channelId,
        sourceType,
        sourceId: view ? String(view.id) : (str(f.sourceId, 'sourceId') ?? newId('msg', 12)),
        actionType: str(f.actionType, 'actionType') ?? 'BUTTON',
        onAction,
        payload: interactionPayload(f),
        triggerId,
        loadingTimeout: 3,
      };
      if (view) payload.view = view;
      return override({ url: m.blockInteraction.url, interactive: true, payload });
    }
    case 'view-action': {
      if (!m.viewAction?.url) throw invalidRequest('The app has no viewAction URL in its manifest.');
      const t = f.viewActionType ?? 'SUBMIT';
      if (t !== 'SUBMIT' && t !== 'CLOSE') throw invalidRequest('viewActionType must be SUBMIT or CLOSE.');
      const view = { ...defaultView(), ...(f.view ?? {}) };
      return override({
        url: m.viewAction.url,
        interactive: true,
        payload: { messageType: 'VIEW_ACTION', ...base, channelId, viewActionType: t, view, triggerId },
      });
    }
    case 'dynamic-menu': {
      const menus = m.dynamicMenus ?? [];
      const onAction = str(f.onAction, 'onAction') ?? menus[0]?.onAction;
      const menu = menus.find((x) => x.onAction === onAction);
      if (!menu)
        throw invalidRequest(
          onAction
            ? `The app has no dynamic menu with onAction ${onAction} (it has: ${menus.map((x) => x.onAction).join(', ') || 'none'}).`
            : 'The app has no dynamic menus.',
        );
      const payload: Record<string, unknown> = {
        messageType: 'DYNAMIC_MENU',
        onAction: menu.onAction,
        ...base,
        triggerId,
      };
      if (f.query !== undefined) payload.query = str(f.query, 'query');
      if (f.value !== undefined) payload.value = str(f.value, 'value');
      if (f.sourceType) payload.sourceType = f.sourceType;
      if (f.sourceId) payload.sourceId = str(f.sourceId, 'sourceId');
      if (f.view) payload.view = f.view;
      return override({ url: menu.url, interactive: true, payload });
    }
    case 'event': {
      const ev = str(f.event, 'event') ?? m.eventSubscriptions?.events?.[0];
      if (!ev) throw invalidRequest('The app subscribes to no events; name one with event.');
      if (!(ev in EVENT_SCOPES)) throw invalidRequest(`${ev} is not a known event.`);
      if (!(m.eventSubscriptions?.events ?? []).includes(ev))
        throw invalidRequest(
          `The app does not subscribe to ${ev}; events are only sent to apps that subscribe to them.`,
        );
      const need = EVENT_SCOPES[ev];
      const scopes = new Set([...(m.scopes?.botScopes ?? []), ...(m.scopes?.userScopes ?? [])]);
      if (need && !scopes.has(need))
        throw invalidRequest(`${ev} needs the scope ${need}, which the app does not have.`);
      const body =
        f.body !== undefined
          ? f.body
          : testEventBody(ev, { app, workspaceId: who.workspaceId, userId: who.userId, channelId, now: new Date(now) });
      return override({
        url: m.eventSubscriptions.url || undefined,
        interactive: false,
        payload: eventPayload(ev, who.workspaceId, who.workspaceUserIds ?? [who.userId], body),
      });
    }
    default:
      throw invalidRequest(`kind must be one of ${KINDS.join(', ')}.`);
  }
}

/**
 * What a delivery is about, in a few words for the delivery list: the command, the shortcut, the
 * element (and where it was), the view action and view, the menu, the event type.
 */
export function subjectOf(kind: DeliveryKind, p: Record<string, unknown>): string {
  const s = (v: unknown) => (typeof v === 'string' ? v : '');
  const view = recordOr(p.view) ?? {};
  switch (kind) {
    case 'slash-command':
      return s(p.slashCommand);
    case 'global-shortcut':
    case 'message-shortcut':
      return s(p.shortcut);
    case 'block-interaction':
      return [s(p.onAction), p.sourceType ? `(${s(p.sourceType)})` : ''].filter(Boolean).join(' ');
    case 'view-action':
      return [s(p.viewActionType), s(view.callbackId)].filter(Boolean).join(' ');
    case 'dynamic-menu':
      return s(p.onAction);
    case 'event':
      return s(p.eventType);
    default:
      return '';
  }
}

/** The event envelope: `body` is a JSON-encoded string (an object makes the official SDK answer 500). */
export function eventPayload(
  eventType: string,
  workspaceId: string,
  workspaceUserIds: string[],
  body: unknown,
): Record<string, unknown> {
  return {
    messageType: APP_EVENTS.has(eventType) ? 'APP_EVENT' : 'PUMBLE_EVENT',
    eventType,
    workspaceId,
    workspaceUserIds,
    body: typeof body === 'string' ? body : JSON.stringify(body ?? {}),
  };
}
