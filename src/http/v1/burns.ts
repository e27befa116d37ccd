// /v1/burn: burn an asset, read a burn, list a user's.
import type { Ctx } from '../../services/context.js';
import { ApiError } from '../../util/errors.js';
import * as s from '../kit/schemas.js';
import { ok, uidOr404, type App } from '../kit/route-kit.js';
import { sendPage } from '../kit/paging.js';
import { createBurn, getBurn, listBurns } from '../../services/assets/lifecycle/index.js';
import { burnObject, created, list, paged } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';

export async function burnRoutes(app: App, ctx: Ctx): Promise<void> {
  const tags = { tags: ['burns'] };

  app.post('/burn', { schema: { ...tags, body: s.burnBody } }, async (req, reply) => {
    return reply.code(201).send(ok(await createBurn(ctx, req.appUid, req.body, req.idempotency)));
  });

  app.get('/burn/:uid', { schema: { ...tags, params: s.uidParam } }, async (req) => {
    return ok(await getBurn(ctx, req.appUid, uidOr404(req.params.uid, 'Burn')));
  });

  app.get('/burn', { schema: { ...tags, querystring: s.userListQuery } }, async (req, reply) => {
    const { user_uid, ...page } = req.query;
    if (user_uid === undefined) throw ApiError.of('not_found');
    return ok(sendPage(req, reply, ctx.installation.publicUrl, await listBurns(ctx, req.appUid, user_uid, page)));
  });
}

/** What /openapi.json says of these routes' answers: joined to them as they are registered (a route without one fails to register). */
export const burnsDocs = {
  'POST /burn': { operationId: 'createBurn', summary: 'Burn an asset', status: 201, data: created },
  'GET /burn/:uid': { operationId: 'getBurn', summary: 'Get a burn', data: burnObject },
  'GET /burn': { operationId: 'listBurns', summary: "List a user's burns", description: `Query \`user_uid\`.${paged}`, data: list(burnObject) },
} satisfies RouteDocs;
