// /v1/asset: create (mint) an asset, read one, list a user's, replace an editable asset's metadata.
import type { Ctx } from '../../services/context.js';
import { ApiError } from '../../util/errors.js';
import * as s from '../kit/schemas.js';
import { ok, uidOr404, type App } from '../kit/route-kit.js';
import { sendPage } from '../kit/paging.js';
import { getAsset, listAssetsOfUser } from '../../services/assets/reads.js';
import type { AssetReads } from '../../services/assets/cache.js';
import { createAsset } from '../../services/assets/create.js';
import { editAsset } from '../../services/assets/lifecycle/index.js';
import { assetObject, created, list, paged } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';
import { z } from 'zod';

export async function assetRoutes(app: App, ctx: Ctx, reads: AssetReads | null): Promise<void> {
  const tags = { tags: ['assets'] };

  app.post('/asset', { schema: { ...tags, body: s.createAssetBody } }, async (req, reply) => {
    return reply.code(201).send(ok(await createAsset(ctx, req.appUid, req.appEnvironment, req.body, req.idempotency)));
  });

  app.get('/asset/:uid', { schema: { ...tags, params: s.uidParam } }, async (req, reply) => {
    const uid = uidOr404(req.params.uid, 'Asset');
    if (!reads) return ok(await getAsset(ctx, req.appUid, uid));
    // The cached answer is the JSON the serializer would have written (src/services/assets/cache.ts).
    return reply.type('application/json; charset=utf-8').send(await reads.answer(req.appUid, uid));
  });

  app.get('/asset', { schema: { ...tags, querystring: s.assetListQuery } }, async (req, reply) => {
    const { user_uid, ...page } = req.query;
    if (user_uid === undefined) throw ApiError.of('not_found');
    return ok(sendPage(req, reply, ctx.installation.publicUrl, await listAssetsOfUser(ctx, req.appUid, user_uid, page)));
  });

  app.put('/asset/:uid', { schema: { ...tags, params: s.uidParam, body: s.editAssetBody } }, async (req) => {
    return ok(await editAsset(ctx, req.appUid, uidOr404(req.params.uid, 'Asset'), req.body.data, req.idempotency));
  });
}

/** What /openapi.json says of these routes' answers: joined to them as they are registered (a route without one fails to register). */
export const assetsDocs = {
  'POST /asset': {
    operationId: 'createAsset',
    summary: 'Create (mint) an asset',
    description: 'Fixes the token id and stores the metadata, answers 201; the mint follows within seconds (`is_minted`, event `asset.minted`).',
    status: 201,
    data: created,
  },
  'GET /asset/:uid': { operationId: 'getAsset', summary: 'Get an asset', data: assetObject },
  'GET /asset': { operationId: 'listAssets', summary: "List a user's assets", description: `Query \`user_uid\`.${paged}`, data: list(assetObject) },
  'PUT /asset/:uid': {
    operationId: 'updateAsset',
    summary: "Replace an asset's metadata",
    description: 'Editable collections only; answers `data: null` at once, then emits ERC-4906 MetadataUpdate on chain and `asset.edited`.',
    data: z.null(),
  },
} satisfies RouteDocs;
