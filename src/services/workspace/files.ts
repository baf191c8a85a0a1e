/**
 * Files of the local workspace (docs/protocol.md §9.7): the official SDK's three-step upload —
 * an upload token for a name and a length, the bytes sent with that token, then "complete",
 * which makes the file a record of the workspace — files on messages, and reading them back.
 * The bytes live behind `FileBlobs` (built in compose.ts, on disk under the data directory);
 * the records in the store. Limits: `filesMaxBytes` per file, `filesTotalMaxBytes` for all.
 */
import type { Readable } from 'node:stream';
import { newId, newSecret, sha256 } from '../../crypto.js';
import { invalidRequest, notFound, payloadTooLarge, unauthenticated } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../logger.js';
import type { Store, Transaction } from '../../store/types.js';
import { WORKSPACE_TABLES, type FileRecord } from '../../model/workspace.js';
import type { Actor } from './users.js';
import type { FileTotalsRecord } from '../../model/workspace.js';
import { must } from '../../must.js';
import type { Json, JsonObject } from '../../model/json.js';

/** Where the bytes are kept (src/files/blob-store.ts). */
export interface FileBlobs {
  write(id: string, data: Readable, maxBytes: number): Promise<number>;
  read(id: string): Readable | undefined;
  remove(id: string): Promise<void>;
  removeExcept(keep: (id: string) => boolean): Promise<void>;
}

export interface FilesDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  blobs: FileBlobs;
  limits: { maxBytes: number; totalMaxBytes: number };
  /** The absolute URL the daemon serves a file at. */
  fileUrl: (fileId: string) => string;
}

/** An upload token, and an upload not yet completed, live this long (in memory: a restart forgets them). */
const UPLOAD_TTL_MS = 10 * 60_000;
const MAX_PENDING = 10_000;
const MAX_NAME = 255;
export const MAX_FILES_PER_MESSAGE = 20;
/**
 * The bytes of every completed file, in one record that each "complete" advances with an
 * expectation: every daemon sees the same total (files are never deleted, so it only grows).
 * Missing in a store from before it existed: summed once from the files.
 */
const TOTALS = 'wsFileTotals';
const TOTALS_ID = 'all';
const MIME = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;

interface Owner {
  workspaceId: string;
  userId: string;
  appId?: string;
}
interface Ticket extends Owner {
  fileId: string;
  name: string;
  length: number;
  expiresAt: number;
}
interface Uploaded extends Ticket {
  size: number;
  mimeType: string;
}

/** POST /v1/files/upload/token (platform.schema.json#uploadTokenBody): the name and size are checked here. */
export interface UploadTokenBody {
  filename?: string;
  length?: number;
}

/** POST /v1/files/upload/complete: the upload's answer sent back (platform.schema.json#uploadCompleteBody). */
export interface UploadCompleteBody {
  original: { requestedFileUploadId: string };
  /** Compared with the signature the upload answered, as sent: any other value does not match. */
  signature?: Json;
}

/** V1.MessageFile: a file as a message shows it. */
export interface MessageFileView {
  id: string;
  owner: string;
  name: string;
  mimeType: string;
  path: string;
  thumbnails: JsonObject[];
  uploadedAtMilli: number;
}

/** The 400 of a completion that does not name its upload. */
export const noUploadNamed = {
  message: 'original.requestedFileUploadId must name the upload.',
  detail: { pointer: '/original/requestedFileUploadId', message: 'is required' },
};

export function createFiles(deps: FilesDeps) {
  const { store, clock, logger, blobs, limits, fileUrl } = deps;
  const tokens = new Map<string, Ticket>(); // sha256(token) → ticket
  const uploaded = new Map<string, Uploaded>(); // fileId → bytes kept, not completed yet
  const reserved = new Map<string, number>(); // fileId → bytes being received
  // bytes of uploads a restart cut off before "complete"
  store
    .all(WORKSPACE_TABLES.files)
    .then((files) => {
      const ids = new Set(files.map((f) => f.id));
      return blobs.removeExcept((id) => ids.has(id));
    })
    .catch((e) => logger.warn('could not remove unfinished uploads', { error: String(e) }));

  /** The bytes of every completed file: the totals record (read in `tx` when given), or a sum of every file. */
  async function totals(tx?: Transaction): Promise<{ bytes: number }> {
    const stored = await (tx ?? store).get(TOTALS, TOTALS_ID);
    if (stored) return { bytes: stored.bytes };
    return { bytes: (await store.all(WORKSPACE_TABLES.files)).reduce((n, f) => n + f.size, 0) };
  }

  /** Completed files (every daemon's) plus this daemon's uploads not completed yet. */
  const used = async () => {
    let n = (await totals()).bytes;
    for (const u of uploaded.values()) n += u.size;
    for (const r of reserved.values()) n += r;
    return n;
  };
  function sweep() {
    const now = clock.now();
    for (const [k, t] of tokens) if (t.expiresAt <= now) tokens.delete(k);
    for (const [id, u] of uploaded) {
      if (u.expiresAt > now) continue;
      uploaded.delete(id);
      void blobs.remove(id).catch(() => {});
    }
  }
  /** `extra`: bytes not yet counted by used() (those an upload asks for). */
  const tooLarge = async (length: number, extra: number) => {
    if (length > limits.maxBytes)
      throw payloadTooLarge(`A file may be at most ${limits.maxBytes} bytes (filesMaxBytes).`);
    if ((await used()) + extra > limits.totalMaxBytes)
      throw payloadTooLarge(`The workspace files would exceed filesTotalMaxBytes (${limits.totalMaxBytes} bytes).`);
  };

  /**
   * The `signature` of an upload's answer: a digest of what was received (id, size, type), which complete checks when
   * it is sent back.
   */
  const signatureOf = (fileId: string, size: number, mimeType: string) =>
    sha256(`appreg-upload|${fileId}|${size}|${mimeType}`);

  /** POST /v1/files/upload/token {filename, length} → V1.FileUploadToken. */
  async function requestToken(a: Actor, b: UploadTokenBody) {
    const { filename, length } = b;
    if (
      filename === undefined ||
      filename.trim() === '' ||
      filename.length > MAX_NAME ||
      /[\u0000-\u001f\u007f]/.test(filename)
    ) {
      throw invalidRequest(`filename must be a name of 1 to ${MAX_NAME} characters.`, [
        { pointer: '/filename', message: 'must be a file name' },
      ]);
    }
    if (length === undefined || !Number.isSafeInteger(length) || length < 0)
      throw invalidRequest('length must be the size of the file in bytes.', [
        { pointer: '/length', message: 'must be a whole number of bytes' },
      ]);
    sweep();
    await tooLarge(length, length);
    if (tokens.size >= MAX_PENDING) tokens.delete(must(tokens.keys().next().value));
    const token = newSecret('upl');
    tokens.set(sha256(token), {
      workspaceId: a.workspaceId,
      userId: a.userId,
      ...(a.appId ? { appId: a.appId } : {}),
      fileId: newId('file', 12),
      name: filename,
      length,
      expiresAt: clock.now() + UPLOAD_TTL_MS,
    });
    return { token };
  }

  /**
   * The upload token (the `authtoken` header of the upload) → the upload it allows, once; 413 when it no longer fits.
   */
  async function beginUpload(token: string | undefined): Promise<Ticket> {
    sweep();
    const key = typeof token === 'string' && token ? sha256(token) : '';
    const t = tokens.get(key);
    if (!t) throw unauthenticated('A valid upload token is required in the authtoken header.');
    tokens.delete(key); // used once, before any wait
    // reserved before the check (which reads the store), so uploads begun meanwhile count it
    reserved.set(t.fileId, t.length);
    try {
      await tooLarge(t.length, 0);
    } catch (e) {
      reserved.delete(t.fileId);
      throw e;
    }
    return t;
  }

  /** The bytes of the upload `t` (at most its declared length) → V1.CompleteFileUpload. */
  async function receive(t: Ticket, data: Readable, mimeType: string) {
    try {
      const size = await blobs.write(t.fileId, data, t.length);
      const mime = MIME.test(mimeType) ? mimeType.toLowerCase() : 'application/octet-stream';
      uploaded.set(t.fileId, { ...t, size, mimeType: mime, expiresAt: clock.now() + UPLOAD_TTL_MS });
      const original = {
        mimeType: mime,
        width: 0,
        height: 0,
        size,
        path: fileUrl(t.fileId),
        duration: 0,
        waveform: [],
        requestedFileUploadId: t.fileId,
        base64Value: '',
      };
      const thumbs: JsonObject[] = [];
      return { original, thumbs, signature: signatureOf(t.fileId, size, mime) };
    } finally {
      reserved.delete(t.fileId);
    }
  }

  /** An upload that ended without its bytes being kept (no file part, an error): forget it and anything written. */
  async function abandon(t: Ticket): Promise<void> {
    reserved.delete(t.fileId);
    uploaded.delete(t.fileId);
    if (!(await store.get(WORKSPACE_TABLES.files, t.fileId))) await blobs.remove(t.fileId);
  }

  /** POST /v1/files/upload/complete {original:{requestedFileUploadId}, thumbs} → V1.File; only by who uploaded it. */
  async function complete(a: Actor, body: UploadCompleteBody) {
    const id = body.original.requestedFileUploadId;
    sweep();
    const u = uploaded.get(id);
    if (!u || u.workspaceId !== a.workspaceId || u.userId !== a.userId || u.appId !== a.appId) throw notFound('Upload');
    const { signature } = body;
    if (signature !== undefined && signature !== signatureOf(id, u.size, u.mimeType))
      throw invalidRequest("signature is not the one the upload answered: send back the upload's answer unchanged.", [
        { pointer: '/signature', message: 'does not match the upload' },
      ]);
    const rec: FileRecord = {
      id,
      workspaceId: u.workspaceId,
      owner: u.userId,
      ...(u.appId ? { appId: u.appId } : {}),
      name: u.name,
      mimeType: u.mimeType,
      size: u.size,
      uploadedAtMilli: clock.now(),
    };
    uploaded.delete(id);
    try {
      // the file and the total in one transaction on the total: two daemons completing at once both count
      await store.transaction(
        async (tx) => {
          const { bytes } = await totals(tx);
          const next: FileTotalsRecord = { id: TOTALS_ID, bytes: bytes + rec.size };
          tx.put(WORKSPACE_TABLES.files, id, rec);
          tx.put(TOTALS, TOTALS_ID, next);
        },
        { attempts: 20 },
      );
    } catch (e) {
      uploaded.set(id, u); // not completed: it may be asked again
      throw e;
    }
    return { id, path: fileUrl(id), name: rec.name };
  }

  /** Files a message may carry: each a file its author uploaded in this workspace (400 otherwise). */
  async function attachable(a: Actor, ids: readonly string[]): Promise<void> {
    const files = await Promise.all(ids.map((id) => store.get(WORKSPACE_TABLES.files, id)));
    ids.forEach((id, i) => {
      const f = files[i];
      if (!f || f.workspaceId !== a.workspaceId || f.owner !== a.userId)
        throw invalidRequest(`${id} is not a file you uploaded.`, [
          { pointer: `/files/${i}`, message: 'unknown file' },
        ]);
    });
  }

  /** V1.MessageFile of each file that still exists. */
  async function views(ids: readonly string[] | undefined) {
    const out: MessageFileView[] = [];
    if (!ids?.length) return out; // most messages carry none: no read
    for (const f of await Promise.all(ids.map((id) => store.get(WORKSPACE_TABLES.files, id)))) {
      if (f)
        out.push({
          id: f.id,
          owner: f.owner,
          name: f.name,
          mimeType: f.mimeType,
          path: fileUrl(f.id),
          thumbnails: [],
          uploadedAtMilli: f.uploadedAtMilli,
        });
    }
    return out;
  }

  /** A file's record and bytes for a reader of `workspaceId`; 404 for another workspace's file. */
  async function open(workspaceId: string, fileId: string): Promise<{ file: FileRecord; data: Readable }> {
    const file = await store.get(WORKSPACE_TABLES.files, fileId);
    const data = file && file.workspaceId === workspaceId ? blobs.read(file.id) : undefined;
    if (!file || !data) throw notFound('File');
    return { file, data };
  }

  return { requestToken, beginUpload, receive, abandon, complete, attachable, views, open };
}

export type Files = ReturnType<typeof createFiles>;
