/**
 * The recorder in the console (docs/testing.md, "Recording a test"): start a recording from the workspace's bar, act
 * as another member while it is on (the owner), stop it, and the page of the test it made: the suite as YAML, the
 * editor (rename, drop steps, loosen a text) and its download. Every POST passes the CSRF check; a recording is its
 * starter's only (another person's is not found).
 */
import { Router, type Request, type Response } from 'express';
import { notFound } from '../../../errors.js';
import type { Principal } from '../../../services/identity.js';
import type { Recordings } from '../../recordings.js';
import { recordingPage } from '../../pages/console/recorder.js';
import {
  handled,
  seeOther,
  sendConsolePage,
  consoleHeaders,
  type ConsoleBase,
  type Form,
  type Signed,
} from './common.js';

export interface ConsoleRecordingDeps {
  base: ConsoleBase;
  recordings: Recordings;
  /** A member of the workspace by id (undefined: none). */
  member(id: string): Promise<{ id: string; name: string; workspaceId: string; isBot?: boolean } | undefined>;
}

const MAX_STEPS = 1000;
/** A page of the console to come back to: a path under /console, else the workspace. */
const backTo = (v: unknown) =>
  typeof v === 'string' && /^\/console\/[^/\\]/.test(v) && v.length < 500 ? v : '/console/channels';
/** The person themselves, whoever they act as: recordings are theirs. */
const self = (s: Signed): Principal => ({ ...s.principal, workspaceUserId: s.personId });
const indexes = (v: unknown): number[] =>
  (Array.isArray(v) ? v : v === undefined ? [] : [v])
    .map(Number)
    .filter((n) => Number.isInteger(n) && n >= 0 && n < MAX_STEPS);
const fileNameOf = (suiteName: string) =>
  `${
    suiteName
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'recorded'
  }-recorded.apptest.yaml`;

export function consoleRecordingRoutes(deps: ConsoleRecordingDeps): Router {
  const { base, recordings } = deps;
  const r = Router();
  const parsed = base.form('16kb', MAX_STEPS * 2 + 10);
  const post = (path: string, fn: (req: Request, res: Response, s: Signed, form: Form) => unknown) =>
    r.post(path, base.signedIn, parsed, base.csrf, handled(base, fn));
  const get = (path: string, fn: (req: Request, res: Response, s: Signed) => unknown) =>
    r.get(path, base.signedIn, handled(base, fn));
  const id = (req: Request) => String(req.params.recordingId);

  post('/console/recordings', async (_req, res, s, b) => {
    await recordings.start(self(s));
    seeOther(res, backTo(b.returnTo));
  });
  post('/console/recordings/:recordingId/act-as', async (req, res, s, b) => {
    const user = typeof b.user === 'string' ? await deps.member(b.user) : undefined;
    if (!user || user.isBot) throw notFound('Workspace user');
    await recordings.actAs(self(s), id(req), user);
    seeOther(res, backTo(b.returnTo));
  });
  post('/console/recordings/:recordingId/stop', async (req, res, s) => {
    await recordings.stop(self(s), id(req));
    seeOther(res, `/console/recordings/${encodeURIComponent(id(req))}`);
  });
  post('/console/recordings/:recordingId', async (req, res, s, b) => {
    const text = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim().slice(0, 200) : undefined);
    await recordings.edit(self(s), id(req), {
      ...(text(b.suiteName) ? { suiteName: text(b.suiteName) } : {}),
      ...(text(b.testName) ? { testName: text(b.testName) } : {}),
      drop: indexes(b.drop),
      loose: indexes(b.loose),
      signatureCheck: b.signature === 'on',
      ...(text(b.app) ? { appId: text(b.app) } : {}),
    });
    seeOther(res, `/console/recordings/${encodeURIComponent(id(req))}`);
  });
  get('/console/recordings/:recordingId', async (req, res, s) => {
    const info = await recordings.get(self(s), id(req));
    const v = await recordings.suite(self(s), id(req));
    const suiteName = v.suite.name;
    const test = v.suite.tests[0];
    sendConsolePage(
      res,
      200,
      recordingPage(
        { ...s.shell, section: 'workspace' },
        {
          id: info.id,
          stopped: !!info.stoppedAt,
          yaml: v.yaml,
          suiteName,
          testName: test?.name ?? '',
          steps: v.steps,
          dropped: v.edits.drop ?? [],
          loosened: v.edits.loose ?? [],
          notes: v.notes,
          ...(v.overHttp ? { signatureCheck: v.edits.signatureCheck !== false } : {}),
          fileName: fileNameOf(suiteName),
          ...(v.apps.length > 1 ? { apps: v.apps, ...(v.appId ? { appId: v.appId } : {}) } : {}),
        },
      ),
    );
  });
  get('/console/recordings/:recordingId/suite.yaml', async (req, res, s) => {
    const v = await recordings.suite(self(s), id(req));
    consoleHeaders(res);
    res
      .status(200)
      .type('application/yaml')
      .setHeader('content-disposition', `attachment; filename="${fileNameOf(String(v.suite.name))}"`);
    res.send(v.yaml);
  });
  return r;
}
