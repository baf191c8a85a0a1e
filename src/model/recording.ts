/**
 * A recording of a conversation as the store keeps it (docs/testing.md, "Recording a test"): its head (who started it,
 * when, whether it is on, who the console acts as, the person's edits, and what the recording has seen so far, so that
 * any daemon appending to it knows what is new), and its events, one record each, numbered in the order they were seen.
 */
import type { RecordedEvent, SuiteEdits } from '../recording-events.js';

export const RECORDING_TABLES = { recordings: 'recordings', events: 'recordingEvents' } as const;

/** What a recording saw of a message: a digest of its text, blocks and attachments, its reactions, its channel. */
interface SeenRecord {
  digest: string;
  reactions: string[];
  channelId: string;
}

export interface RecordingRecord {
  id: string;
  workspaceId: string;
  /** The person who started it. */
  ownerId: string;
  startedAt: string;
  stoppedAt?: string;
  /** 'yes' while it is on (indexed: the recordings that are on, for every daemon); absent once stopped. */
  on?: 'yes';
  /** Who the console acts as while it is on (the owner only), and their name. */
  actingAs?: { id: string; name: string };
  /** How many events it holds (the next one's number), and how many were left out past the limit. */
  events: number;
  dropped: number;
  /** The apps it saw called, by id: their names then. */
  apps: Record<string, string>;
  edits: SuiteEdits;
  /** The messages it saw, by id. */
  seen: Record<string, SeenRecord>;
  /** The number of each call's event, by delivery id: the event is updated in place when its answer comes. */
  calls: Record<string, number>;
}

export interface RecordingEventRecord {
  /** `<recording id>|<number>`. */
  id: string;
  recordingId: string;
  seq: number;
  event: RecordedEvent;
}

/** The id of a recording's event `seq`. */
export const recordingEventId = (recordingId: string, seq: number) => `${recordingId}|${seq}`;
