/**
 * The token endpoint's form reader (docs/protocol.md §3, endpoint 6): multipart/form-data as every
 * client sends it, parsed at once when it has the plain shape (simpleForm), else by multer with all of
 * its rules and errors; urlencoded by express's reader. Works on a plain node:http request.
 */
import { Buffer, isAscii } from 'node:buffer';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express from 'express';
import multer from 'multer';
import { invalidRequest, unsupportedMediaType } from '../../errors.js';
import { must } from '../../must.js';
import { recordOr } from '../../unknown-values.js';
import { onNode, type RawHandler } from './on-node.js';

// multer 2's own option (its index.js documents it), which @types/multer does not list yet
declare module 'multer' {
  interface Options {
    /** Feeds the request body to busboy, instead of `req.pipe(busboy)`. */
    streamHandler?(req: IncomingMessage, busboy: NodeJS.WritableStream): void;
  }
}

export const FORM_LIMITS = { fields: 10, fieldSize: 4096, fieldNameSize: 100, files: 0, parts: 10, headerPairs: 20 };

const mediaType = (req: IncomingMessage) =>
  String(req.headers['content-type'] ?? '')
    .split(';')[0]
    ?.trim()
    .toLowerCase();

/** A body up to this size is read whole and, when it has the plain shape, parsed at once (simpleForm). */
const SIMPLE_FORM_MAX = 64 * 1024;
/** `multipart/form-data; boundary=…` with nothing else, the boundary plain or quoted. */
const PLAIN_MULTIPART = /^multipart\/form-data; ?boundary=(?:([\w'()+,\-./:=?]{1,70})|"([\w'()+,\-./:=?]{1,70})")$/i;
/** A part's one header: its name, plain (as FormData and the SDK write it: no file, no escapes). */
const PLAIN_PART_HEADER = /^content-disposition: ?form-data; ?name="([\w.-]{1,100})"$/i;

/** Whether s[from, to) is 1 to `max` characters, each one `ok`. */
function allOf(s: string, from: number, to: number, max: number, ok: (c: number) => boolean): boolean {
  if (to - from < 1 || to - from > max) return false;
  for (let i = from; i < to; i++) if (!ok(s.charCodeAt(i))) return false;
  return true;
}
/** A test of a character code for membership of the ASCII characters of `chars`. */
function charClass(chars: string): (c: number) => boolean {
  const member = new Uint8Array(128);
  for (let i = 0; i < chars.length; i++) member[chars.charCodeAt(i)] = 1;
  return (c) => member[c] === 1;
}
const WORD = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_';
/** [\w.-] */
const nameChar = charClass(`${WORD}.-`);
/** [\w'()+,\-./:=?] */
const boundaryChar = charClass(`${WORD}'()+,-./:=?`);

const MULTIPART_AS_SENT = 'multipart/form-data; boundary=';
const PART_HEADER_AS_SENT = 'Content-Disposition: form-data; name="';

/**
 * The boundary of a content type of the plain shape (PLAIN_MULTIPART), else undefined. The spelling
 * clients send (FormData, the SDK) is checked without a RegExp, every other spelling by PLAIN_MULTIPART.
 */
export function plainBoundary(contentType: string): string | undefined {
  const n = MULTIPART_AS_SENT.length;
  if (contentType.startsWith(MULTIPART_AS_SENT) && allOf(contentType, n, contentType.length, 70, boundaryChar))
    return contentType.slice(n);
  const m = PLAIN_MULTIPART.exec(contentType);
  return m ? (m[1] ?? m[2]) : undefined;
}

/** The name of a part's header of the plain shape (PLAIN_PART_HEADER), else undefined; as plainBoundary. */
export function plainPartName(header: string): string | undefined {
  const n = PART_HEADER_AS_SENT.length;
  if (
    header.startsWith(PART_HEADER_AS_SENT) &&
    header.endsWith('"') &&
    allOf(header, n, header.length - 1, 100, nameChar)
  )
    return header.slice(n, -1);
  return PLAIN_PART_HEADER.exec(header)?.[1];
}

/**
 * The fields of a multipart form of the plain shape every client sends for this endpoint (one
 * `Content-Disposition: form-data; name="…"` header per part, ASCII only, within FORM_LIMITS, no
 * name twice, no preamble or epilogue), else undefined: then multer reads the same bytes, with all
 * of its rules and errors. Measured: multer and busboy were 11 % of an exchange's CPU, mostly the
 * parser made for each request.
 */
export function simpleForm(body: Buffer, boundary: string): Record<string, string> | undefined {
  if (!isAscii(body)) return undefined;
  const text = body.toString('latin1');
  const delim = `\r\n--${boundary}`;
  if (!text.startsWith(`--${boundary}\r\n`)) return undefined;
  const fields: Record<string, string> = Object.create(null) as Record<string, string>;
  let at = boundary.length + 4;
  for (let parts = 1; ; parts++) {
    if (parts > FORM_LIMITS.fields) return undefined;
    const headEnd = text.indexOf('\r\n\r\n', at);
    if (headEnd < 0) return undefined;
    const name = plainPartName(text.slice(at, headEnd));
    if (name === undefined || name in fields) return undefined;
    const valueEnd = text.indexOf(delim, headEnd + 4);
    if (valueEnd < 0 || valueEnd - (headEnd + 4) > FORM_LIMITS.fieldSize) return undefined;
    // a string of its own: a slice of `text` would keep the whole body alive while a field is kept
    fields[name] = body.toString('latin1', headEnd + 4, valueEnd);
    at = valueEnd + delim.length;
    if (text.startsWith('\r\n', at)) {
      at += 2;
      continue;
    }
    const rest = text.slice(at);
    return rest === '--' || rest === '--\r\n' ? fields : undefined;
  }
}

/**
 * multipart/form-data (what the official SDK sends) or urlencoded; nothing else, no files,
 * small fields. Works on a plain node:http request.
 */
export function tokenForm(): RawHandler {
  const urlencoded = onNode({
    handle: express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10, type: () => true }),
  });
  // multer reads what was read already, then the rest of the stream if any (it calls streamHandler
  // synchronously, so `feed` is this request's while the call lasts)
  let feed: { head: Buffer; rest: boolean } | undefined;
  const multipart = onNode({
    handle: multer({
      limits: FORM_LIMITS,
      streamHandler: (req: IncomingMessage, busboy: NodeJS.WritableStream) => {
        if (!feed) return void req.pipe(busboy);
        if (!feed.rest) return void busboy.end(feed.head);
        busboy.write(feed.head);
        req.pipe(busboy);
      },
    }).none(),
  });
  const viaMulter = (
    req: IncomingMessage,
    res: ServerResponse,
    next: (err?: unknown) => void,
    head?: Buffer,
    rest = false,
  ) => {
    feed = head && { head, rest };
    try {
      // what the multipart reader throws beyond multer's own limits is a malformed form
      multipart(req, res, (err) =>
        next(
          err === undefined || recordOr(err)?.name === 'MulterError'
            ? err
            : invalidRequest('The multipart form is malformed.'),
        ),
      );
    } finally {
      feed = undefined;
    }
  };
  return (req, res, next) => {
    const boundary = plainBoundary(String(req.headers['content-type'] ?? ''));
    const type = boundary === undefined ? mediaType(req) : 'multipart/form-data';
    if (type === 'multipart/form-data') {
      if (boundary === undefined || Number(req.headers['content-length'] ?? 0) > SIMPLE_FORM_MAX)
        return viaMulter(req, res, next);
      return readUpTo(req, SIMPLE_FORM_MAX, (err, body, complete) => {
        if (err) return next(err);
        const fields = complete ? simpleForm(must(body), boundary) : undefined;
        if (!fields) return viaMulter(req, res, next, body, !complete);
        req.body = fields;
        next();
      });
    }
    if (type === 'application/x-www-form-urlencoded') return urlencoded(req, res, next);
    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (!hasBody) {
      req.body = {};
      return next();
    }
    next(
      unsupportedMediaType(
        'Send multipart/form-data (or application/x-www-form-urlencoded) with client-id, client-secret and code.',
      ),
    );
  };
}

/**
 * Read `req`'s body up to `max` bytes: `complete` when it ended within them; else the bytes read so
 * far, the stream paused where it stopped (to be piped on). An error or a close before the end is `err`.
 */
function readUpTo(
  req: IncomingMessage,
  max: number,
  done: (err: unknown, body?: Buffer, complete?: boolean) => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const stop = () => {
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('error', onError);
    req.off('close', onClose);
  };
  const onData = (c: Buffer) => {
    chunks.push(c);
    size += c.length;
    if (size <= max) return;
    stop();
    req.pause();
    done(undefined, Buffer.concat(chunks), false);
  };
  const onEnd = () => {
    stop();
    done(undefined, chunks.length === 1 ? must(chunks[0]) : Buffer.concat(chunks), true);
  };
  const onError = (e: unknown) => {
    stop();
    done(e);
  };
  const onClose = () => onError(Object.assign(new Error('request aborted'), { code: 'ECONNABORTED' }));
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
  req.on('close', onClose);
}
