/**
 * What a recording keeps (docs/testing.md, "Recording a test"): the events the daemon saw while it was on, in the
 * order it saw them, as plain data in the platform's own shapes. The daemon appends them and keeps them in its store
 * (server/recordings.ts, model/recording.ts); `suiteOf` (apptest/recorder/suite-of.ts) turns them into a suite.
 * Nothing here is interpreted yet: a call's body is the body the app was sent.
 */

/** A message as it was when the recording saw it (new, or changed). */
export interface SeenMessage {
  id: string;
  channelId: string;
  /** The workspace user who posted it (the app's bot user for an app). */
  author: string;
  /** The app whose token posted it. */
  appId?: string;
  text: string;
  blocks: unknown[];
  threadRootId?: string;
  /** Only these users see it. */
  ephemeralTo?: string[];
}

/** A call to the app (a delivery), with the app's answer once it came. */
export interface RecordedCall {
  id: string;
  /** slash-command, global-shortcut, message-shortcut, block-interaction, view-action, dynamic-menu, event. */
  kind: string;
  appId: string;
  /** What it is about: the command, shortcut, element or event type. */
  subject?: string;
  /** The user it was made as. */
  user: string;
  /** The body the app was sent. */
  payload: Record<string, unknown>;
  /** How it reached the app: over HTTP (signed) or a socket-mode connection. */
  transport?: 'http' | 'socket';
  /** acked, nacked, response, timeout, …; absent while it is under way. */
  outcome?: string;
  /** The app's answer body (a modal, options, an ack's body). */
  response?: unknown;
  /** What the user was shown with the answer (the app's message, or the offline message). */
  ephemeralMessage?: string;
}

export type RecordedEvent =
  | { type: 'message'; message: SeenMessage }
  | { type: 'message-changed'; message: SeenMessage }
  | { type: 'message-deleted'; id: string }
  | { type: 'reaction'; user: string; messageId: string; code: string }
  | { type: 'call'; call: RecordedCall }
  /** A modal closed in the console without telling the app (its view does not ask for notifyOnClose). */
  | { type: 'view-closed'; user: string };

/** A person of the workspace, as the recording names them. */
export interface RecordedPerson {
  id: string;
  name: string;
  owner: boolean;
  /** An app's bot user. */
  bot?: boolean;
}

/** What a suite is made of: the events, who is who, and the apps' names (the app under test is the one called most). */
export interface Recording {
  events: RecordedEvent[];
  people: RecordedPerson[];
  apps: Array<{ id: string; name: string }>;
  /** The names of the channels it saw used (a direct conversation has none). */
  channels?: Array<{ id: string; name: string }>;
}

/** What the person changed before saving: names, steps dropped, text expectations loosened (by step index). */
export interface SuiteEdits {
  suiteName?: string;
  testName?: string;
  drop?: number[];
  loose?: number[];
  /** false: no test of the app's signature check (added for an app called over HTTP). */
  signatureCheck?: boolean;
  /** The app the suite is about, of those used (default: the one called most). */
  appId?: string;
}
