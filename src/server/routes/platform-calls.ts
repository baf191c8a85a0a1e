/**
 * Permanent calls (docs/protocol.md §9.4): `POST /v1/calls/permanent` as the official SDK's
 * createPermanentCall sends it, and the page its link opens (a link of the daemon's own).
 */
import { Router } from 'express';
import { mount, route } from './route-table.js';
import { AppError } from '../../errors.js';
import type { Calls } from '../../services/workspace/calls.js';
import { callPage, noCallPage } from '../pages/call.js';
import { sendPage } from '../pages/send.js';
import type { PlatformGate } from './platform-gate.js';

/** The platform API's call (docs/protocol.md §9.4); the page of GET /calls/{code} is for browsers. */
export const CALL_ROUTES = {
  permanent: route({
    method: 'post',
    path: '/v1/calls/permanent',
    summary: 'A permanent call: its link, a page of the daemon',
    scope: 'calls:write',
    answers: { 200: 'The call' },
    auth: 'app-token',
  }),
};

export function platformCallRoutes(deps: { platform: PlatformGate; calls: Calls }): Router {
  const { platform: p, calls } = deps;
  const r = Router();
  mount(r, CALL_ROUTES.permanent, [p.gate, p.need('calls:write')], async (_req, res) => {
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
