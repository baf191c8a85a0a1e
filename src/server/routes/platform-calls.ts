/**
 * Permanent calls (docs/protocol.md §9.4): `POST /v1/calls/permanent` as the official SDK's
 * createPermanentCall sends it, and the page its link opens (a link of the daemon's own).
 */
import { Router } from 'express';
import { AppError } from '../../errors.js';
import type { Calls } from '../../services/workspace/calls.js';
import { callPage, noCallPage } from '../pages/call.js';
import { sendPage } from '../pages/send.js';
import type { PlatformGate } from './platform-gate.js';

export function platformCallRoutes(deps: { platform: PlatformGate; calls: Calls }): Router {
  const { platform: p, calls } = deps;
  const r = Router();
  r.post('/v1/calls/permanent', p.gate, p.need('calls:write'), async (_req, res) => {
    res.json(await calls.permanent(p.actor(res)));
  });
  r.get('/calls/:code', async (req, res) => {
    try {
      sendPage(res, 200, callPage(await calls.byCode(String(req.params.code))));
    } catch (e) {
      if (!(e instanceof AppError) || e.status !== 404) throw e;
      sendPage(res, 404, noCallPage());
    }
  });
  return r;
}
