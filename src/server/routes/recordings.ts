/**
 * Recordings through the management API (docs/protocol.md §2.9), for `appreg test --record`: start one, read it, stop
 * it, and read the suite it makes. Each acts on the caller's own recordings; another person's is not found. An act-as
 * token is refused (it records nobody's session).
 */
import { Router } from 'express';
import { mountAuthed, route } from './route-table.js';
import { schema } from '../../validation/http-input.js';
import type { Recordings } from '../recordings.js';

export interface RecordingRoutesDeps {
  recordings: Recordings;
  /** Where a browser reaches the console. */
  baseUrl(): string;
}

const auth = 'authtoken';
const recordingPath = schema<{ recordingId: string }>('management#recordingPath');

/** The recordings of the caller, relative to MGMT_BASE (docs/protocol.md §2.9). */
export const RECORDING_ROUTES = {
  start: route({
    method: 'post',
    path: '/recordings',
    summary: "Start recording the caller's workspace (their recording that is on, if any)",
    answers: { 201: '{recording, consoleUrl}' },
    auth,
  }),
  active: route({
    method: 'get',
    path: '/recordings',
    summary: "The caller's recording that is on, or none",
    answers: { 200: '{recordings}' },
    auth,
  }),
  get: route({
    method: 'get',
    path: '/recordings/:recordingId',
    summary: 'One of the caller’s recordings',
    params: recordingPath,
    answers: { 200: '{recording, consoleUrl}' },
    auth,
  }),
  stop: route({
    method: 'post',
    path: '/recordings/:recordingId/stop',
    summary: 'Stop a recording',
    params: recordingPath,
    answers: { 200: '{recording}' },
    auth,
  }),
  suite: route({
    method: 'get',
    path: '/recordings/:recordingId/suite',
    summary: 'The suite a recording makes (appreg test)',
    params: recordingPath,
    answers: { 200: '{suite, yaml, steps, notes, appId}' },
    auth,
  }),
};

export function recordingRoutes(deps: RecordingRoutesDeps): Router {
  const { recordings } = deps;
  const r = Router({ mergeParams: true });
  const consoleUrl = (id: string) =>
    `${deps.baseUrl().replace(/\/+$/, '')}/console/recordings/${encodeURIComponent(id)}`;
  const R = RECORDING_ROUTES;

  mountAuthed(r, R.start, [], async (_req, res, p) => {
    const rec = await recordings.start(p);
    res.status(201).json({ recording: rec, consoleUrl: consoleUrl(rec.id) });
  });
  mountAuthed(r, R.active, [], async (_req, res, p) => {
    const on = await recordings.activeOf(p.workspaceUserId);
    res.json({ recordings: on ? [on] : [] });
  });
  mountAuthed(r, R.get, [], async (_req, res, p, { params }) => {
    const rec = await recordings.get(p, params.recordingId);
    res.json({ recording: rec, consoleUrl: consoleUrl(rec.id) });
  });
  mountAuthed(r, R.stop, [], async (_req, res, p, { params }) => {
    res.json({ recording: await recordings.stop(p, params.recordingId) });
  });
  mountAuthed(r, R.suite, [], async (_req, res, p, { params }) => {
    const view = await recordings.suite(p, params.recordingId);
    res.json({ suite: view.suite, yaml: view.yaml, steps: view.steps, notes: view.notes, appId: view.appId });
  });
  return r;
}
