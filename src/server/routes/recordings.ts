/**
 * Recordings through the management API (docs/protocol.md §2.10), for `appreg test --record`: start one, read it, stop
 * it, and read the suite it makes. Each acts on the caller's own recordings; another person's is not found. An act-as
 * token is refused (it records nobody's session).
 */
import { Router } from 'express';
import { authed } from './auth.js';
import type { Recordings } from '../recordings.js';

export interface RecordingRoutesDeps {
  recordings: Recordings;
  /** Where a browser reaches the console. */
  baseUrl(): string;
}

export function recordingRoutes(deps: RecordingRoutesDeps): Router {
  const { recordings } = deps;
  const r = Router({ mergeParams: true });
  const consoleUrl = (id: string) =>
    `${deps.baseUrl().replace(/\/+$/, '')}/console/recordings/${encodeURIComponent(id)}`;

  r.post(
    '/recordings',
    authed(async (_req, res, p) => {
      const rec = await recordings.start(p);
      res.status(201).json({ recording: rec, consoleUrl: consoleUrl(rec.id) });
    }),
  );
  r.get(
    '/recordings',
    authed((_req, res, p) => {
      const on = recordings.activeOf(p.workspaceUserId);
      res.json({ recordings: on ? [on] : [] });
    }),
  );
  r.get(
    '/recordings/:id',
    authed((req, res, p) => {
      const rec = recordings.get(p, String(req.params.id));
      res.json({ recording: rec, consoleUrl: consoleUrl(rec.id) });
    }),
  );
  r.post(
    '/recordings/:id/stop',
    authed(async (req, res, p) => {
      res.json({ recording: await recordings.stop(p, String(req.params.id)) });
    }),
  );
  r.get(
    '/recordings/:id/suite',
    authed(async (req, res, p) => {
      const view = await recordings.suite(p, String(req.params.id));
      res.json({ suite: view.suite, yaml: view.yaml, steps: view.steps, notes: view.notes, appId: view.appId });
    }),
  );
  return r;
}
