// /v1/transfer: move an asset to another address or user, read a transfer, list a user's.
import type { Ctx } from '../../services/context.js';
import { ApiError } from '../../util/errors.js';
import * as s from '../kit/schemas.js';
import { ok, uidOr404, type App } from '../kit/route-kit.js';
import { sendPage } from '../kit/paging.js';
import { createTransfer, getTransfer, listTransfers } from '../../services/assets/lifecycle/index.js';
import { created, transferObject, list, paged } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';

export async function transferRoutes(app: App, ctx: Ctx): Promise<void> {
  const tags = { tags: ['transfers'] };

  app.post('/transfer', { schema: { ...tags, body: s.transferBody } }, async (req, reply) => {
    return reply.code(201).send(ok(await createTransfer(ctx, req.appUid, req.body, req.idempotency)));
  });

  app.get('/transfer/:uid', { schema: { ...tags, params: s.uidParam } }, async (req) => {
    return ok(await getTransfer(ctx, req.appUid, uidOr404(req.params.uid, 'Transfer')));
  });

  app.get('/transfer', { schema: { ...tags, querystring: s.userListQuery } }, async (req, reply) => {
    const { user_uid, ...page } = req.query;
    if (user_uid === undefined) throw ApiError.of('not_found');
    return ok(sendPage(req, reply, ctx.installation.publicUrl, await listTransfers(ctx, req.appUid, user_uid, page)));
  });
}

/** What /openapi.json says of these routes' answers: joined to them as they are registered (a route without one fails to register). */
export const transfersDocs = {
  'POST /transfer': {
    operationId: 'createTransfer',
    summary: 'Transfer an asset to an address',
    description: "Signed by the owner's key and relayed (ERC-2771). A failed precondition answers 400 naming it.",
    status: 201,
    data: created,
  },
  'GET /transfer/:uid': { operationId: 'getTransfer', summary: 'Get a transfer', data: transferObject },
  'GET /transfer': {
    operationId: 'listTransfers',
    summary: "List a user's transfers",
    description: `Query \`user_uid\`.${paged}`,
    data: list(transferObject),
  },
} satisfies RouteDocs;
