/**
 * Files (docs/protocol.md §9.7), as the official SDK uploads them: an upload token through the
 * platform API, the bytes as the multipart part `file` to `/upload/files` (the SDK's
 * `PUMBLE_FILEUPLOAD_URL` may point at the daemon) with that token in the `authtoken` header,
 * then "complete". `GET /files/{id}` serves a file to a token of its workspace: an app's token
 * (`token` + `x-app-token`, scope messages:read) or a workspace user's management token.
 */
import { Router, type Response } from 'express';
import multer from 'multer';
import { invalidRequest, payloadTooLarge, unauthenticated } from '../../errors.js';
import type { IdentityService } from '../../services/identity.js';
import {
  noUploadNamed,
  type Files,
  type UploadCompleteBody,
  type UploadTokenBody,
} from '../../services/workspace/files.js';
import { jsonBody } from '../middleware.js';
import type { PlatformGate } from './platform-gate.js';
import { fieldsOf, mount, route, type NotAnObject } from './route-table.js';
import { onNode } from './on-node.js';
import { ownWords, schema } from '../../validation/http-input.js';
import { notActingAs } from './auth.js';

export interface PlatformFilesDeps {
  platform: PlatformGate;
  files: Files;
  identity: IdentityService;
  bodyLimitBytes: number;
}

/** RFC 5987 ext-value characters: what encodeURIComponent leaves but a header parameter must not carry. */
const extValue = (name: string) =>
  encodeURIComponent(name).replace(/['()*!]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
/** The multipart form of an upload: one file part, a few small fields at most. */
const FORM_LIMITS = { files: 1, fields: 10, fieldSize: 1024, fieldNameSize: 100, parts: 11, headerPairs: 20 };

const app = 'app-token';

/** Files (docs/protocol.md §9.7): the upload token, the upload itself, its completion, and the file. */
export const FILE_ROUTES = {
  uploadToken: route({
    method: 'post',
    path: '/v1/files/upload/token',
    summary: 'An upload token for a file of a given name and length',
    body: schema<UploadTokenBody | NotAnObject>('platform#uploadTokenBody'),
    scope: 'files:write',
    answers: { 200: 'The upload token and where to send the bytes' },
    auth: app,
  }),
  uploadComplete: route({
    method: 'post',
    path: '/v1/files/upload/complete',
    summary: 'Complete uploads: the files become attachable',
    body: schema<UploadCompleteBody>('platform#uploadCompleteBody'),
    // a body without its upload's id, however it is missing, in the files service's words
    refuse: ownWords(
      (p) => (p.pointer === '' || p.pointer.startsWith('/original') ? noUploadNamed.detail : undefined),
      () => noUploadNamed.message,
    ),
    scope: 'files:write',
    answers: { 200: 'The files' },
    auth: app,
  }),
  upload: route({
    method: 'post',
    path: '/upload/files',
    summary: 'The bytes of an upload, as the multipart part file, with the upload token in the authtoken header',
    form: schema<unknown>('platform#uploadForm'),
    bodyTypes: ['multipart/form-data'],
    answers: { 200: 'The upload' },
    auth: 'none',
  }),
  file: route({
    method: 'get',
    path: '/files/:fileId',
    summary: "A file's bytes, to an app's token (scope messages:read) or an Authtoken of its workspace",
    params: schema<{ fileId: string }>('platform#filePath'),
    answers: { 200: 'The bytes, as an attachment' },
    auth: ['app-token', 'authtoken'],
  }),
};

export function platformFileRoutes(deps: PlatformFilesDeps): Router {
  const { platform: p, files, identity } = deps;
  const { gate, need } = p;
  const body = jsonBody(deps.bodyLimitBytes);
  const r = Router();

  const R = FILE_ROUTES;
  mount(r, R.uploadToken, [gate, need('files:write'), body], async (_req, res, { body: b }) => {
    res.json(await files.requestToken(p.actor(res), fieldsOf(b)));
  });
  mount(r, R.uploadComplete, [gate, need('files:write'), body], async (_req, res, { body: b }) => {
    res.json(await files.complete(p.actor(res), b));
  });

  r[R.upload.method](R.upload.path, async (req, res, next) => {
    let ticket: Awaited<ReturnType<Files['beginUpload']>>;
    try {
      ticket = await files.beginUpload(header(req.headers['authtoken']));
    } catch (e) {
      req.resume(); // the answer does not wait for a body nobody will keep
      return next(e);
    }
    let answer: unknown;
    // settles once the write is done with its file (kept, or its .part removed)
    let received: Promise<unknown> = Promise.resolve();
    const storage: multer.StorageEngine = {
      _handleFile(_req, file, cb) {
        const receiving = files.receive(ticket, file.stream, file.mimetype);
        received = receiving.catch(() => {});
        receiving.then(
          (a) => {
            answer = a;
            cb(null, { size: a.original.size });
          },
          (e: unknown) => cb(e),
        );
      },
      _removeFile(_req, _file, cb) {
        files.abandon(ticket).then(() => cb(null), cb);
      },
    };
    const upload = onNode({
      handle: multer({ storage, limits: { ...FORM_LIMITS, fileSize: ticket.length } }).single('file'),
    });
    // Multer may call back before the write has settled: an error of the part's stream ends its wait for the
    // storage (Node 26 emits it before the write's cleanup ran). The answer waits for the write, so a refused
    // upload has left nothing behind by the time it is answered.
    upload(req, res, (err?: unknown) => {
      void received.then(() => {
        if (!err && answer !== undefined) return void res.json(answer);
        files.abandon(ticket).catch(() => {});
        if (err instanceof multer.MulterError && err.code === 'LIMIT_FILE_SIZE')
          return next(
            payloadTooLarge(
              `The file is larger than the length its upload token was asked for (${ticket.length} bytes).`,
            ),
          );
        next(err ?? invalidRequest('The form has no file part named file.'));
      });
    });
  });

  const serve = async (res: Response, workspaceId: string, fileId: string) => {
    const { file, data } = await files.open(workspaceId, fileId);
    res.setHeader('content-type', file.mimeType);
    res.setHeader('content-length', String(file.size));
    // the bytes are whatever an app sent: never rendered as a page of the daemon's origin
    res.setHeader('content-disposition', `attachment; filename*=UTF-8''${extValue(file.name)}`);
    res.setHeader('content-security-policy', "default-src 'none'; sandbox");
    data.on('error', (e) => res.destroy(e));
    data.pipe(res);
  };
  // an app's token (what the SDK's files.fetchFile sends)…
  mount(
    r,
    R.file,
    [(req, _res, next) => next(req.headers['token'] === undefined ? 'route' : undefined), gate, need('messages:read')],
    async (_req, res, { params }) => {
      await serve(res, p.actor(res).workspaceId, params.fileId);
    },
  );
  // …or a workspace user's management token
  mount(r, R.file, [], async (req, res, { params }) => {
    const token = header(req.headers['authtoken']);
    if (!token)
      throw unauthenticated("An app token (token, x-app-token) or an Authtoken of the file's workspace is required.");
    await serve(res, notActingAs(await identity.authenticate(token)).workspaceId, params.fileId);
  });
  return r;
}
