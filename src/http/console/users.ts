// The console's users page: a list with search, and one user with everything of theirs.
import { z } from 'zod';
import { listUsers, userDetail } from '../../services/console/queries.js';
import { str } from '../kit/schemas.js';
import { ok } from '../kit/route-kit.js';
import { appFinder, appParam, page, type ConsolePage } from './kit.js';

export const userPages: ConsolePage = async (app, deps) => {
  const { ctx } = deps;
  const requireApp = appFinder(ctx);
  app.get('/apps/:uid/users', { schema: { params: appParam, querystring: z.object({ ...page, q: str().max(320).optional() }) } }, async (req) => {
    return ok(await listUsers(ctx, await requireApp(req.params.uid), { cursor: req.query.cursor, limit: req.query.limit, search: req.query.q }));
  });

  app.get('/apps/:uid/users/:user', { schema: { params: z.object({ uid: str(), user: str() }) } }, async (req) => {
    return ok(await userDetail(ctx, await requireApp(req.params.uid), req.params.user));
  });
};
