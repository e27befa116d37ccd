// /v1/asset: create (mint) an asset or a batch of up to 100, read one, list a user's, replace an editable asset's metadata.
import type { Ctx } from '../../services/context.js';
import { ApiError } from '../../util/errors.js';
import * as s from '../kit/schemas.js';
import { ok, uidOr404, type App } from '../kit/route-kit.js';
import { jsonPageAnswer, sendJsonPage } from '../kit/paging.js';
import { getAsset, listAssetsOfUser, type AssetJsonCache } from '../../services/assets/reads.js';
import { createAsset } from '../../services/assets/create.js';
import { createAssetBatch } from '../../services/assets/batch.js';
import { admitted } from '../../services/assets/admission.js';
import { editAsset } from '../../services/assets/lifecycle/index.js';
import { assetObject, created, list, paged } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';
import { z } from 'zod';
import { validatorCompiler } from 'fastify-type-provider-zod';
import type { FastifyRouteSchemaDef, FastifyValidationResult } from 'fastify/types/schema.js';
import { quickAssetBody } from '../kit/quick-asset-body.js';

export async function assetRoutes(app: App, ctx: Ctx, reads: AssetJsonCache | null): Promise<void> {
  const tags = { tags: ['assets'] };

  app.post('/asset', { schema: { ...tags, body: s.createAssetBody }, validatorCompiler: quickBodyFirst }, async (req, reply) => {
    const retryAfter = (seconds: number) => reply.header('retry-after', String(seconds));
    const uid = await admitted(ctx, req.headers['content-length'], retryAfter, () =>
      createAsset(ctx, req.appUid, req.appEnvironment, req.body, req.idempotency),
    );
    return reply.code(201).send(ok(uid));
  });

  app.post('/asset/batch', { schema: { ...tags, body: s.assetBatchBody } }, async (req, reply) => {
    const items = req.body.assets.map(s.batchItem);
    const retryAfter = (seconds: number) => reply.header('retry-after', String(seconds));
    const answers = await admitted(ctx, req.headers['content-length'], retryAfter, () =>
      createAssetBatch(ctx, req.appUid, req.appEnvironment, items, req.idempotency),
    );
    return reply.code(201).send(ok(answers));
  });

  // Not async: an answer from memory is sent at once, without a promise for Fastify to wait on.
  app.get('/asset/:uid', { schema: { ...tags, params: s.uidParam } }, (req, reply) => {
    const uid = uidOr404(req.params.uid, 'Asset');
    if (!reads) return getAsset(ctx, req.appUid, uid).then(ok);
    // The cached object is the JSON the serializer would have written (src/services/assets/cache.ts); a
    // string answer goes out in one write with its headers.
    const send = (json: string) => reply.type('application/json; charset=utf-8').send(`{"success":true,"data":${json}}`);
    const now = reads.answerNow(req.appUid, uid);
    if (now === undefined) return reads.answer(req.appUid, uid).then(send);
    send(now);
  });

  app.get('/asset', { schema: { ...tags, querystring: s.assetListQuery } }, async (req, reply) => {
    const { user_uid, ...page } = req.query;
    if (user_uid === undefined) throw ApiError.of('not_found');
    return sendJsonPage(req, reply, ctx.installation.publicUrl, await listAssetsOfUser(ctx, req.appUid, user_uid, page, jsonPageAnswer, reads));
  });

  app.put('/asset/:uid', { schema: { ...tags, params: s.uidParam, body: s.editAssetBody } }, async (req) => {
    return ok(await editAsset(ctx, req.appUid, uidOr404(req.params.uid, 'Asset'), req.body.data, req.idempotency));
  });
}

/** POST /asset/batch's answer: an entry per item, in order. */
const batchAnswer = z
  .array(
    z.union([
      created,
      z.object({ error: z.object({ code: z.string().meta({ example: 'asset_external_id_exists' }), message: z.string() }) }).meta({ id: 'BatchItemError' }),
    ]),
  )
  .describe('One entry per item of the request, in order.')
  .meta({ id: 'AssetBatchResult' });

/** What /openapi.json says of these routes' answers: joined to them as they are registered (a route without one fails to register). */
export const assetsDocs = {
  'POST /asset': {
    operationId: 'createAsset',
    summary: 'Create (mint) an asset',
    description: 'Fixes the token id and stores the metadata, answers 201; the mint follows within seconds (`is_minted`, event `asset.minted`).',
    status: 201,
    data: created,
  },
  'POST /asset/batch': {
    operationId: 'createAssetBatch',
    summary: 'Create (mint) up to 100 assets',
    description:
      '`{assets: [AssetParams, …]}` (1-100). Each item is checked and accepted on its own, as POST /asset would: the answer has one entry per item, in order, `{uid}` or `{error: {code, message}}`. The Idempotency-Key covers the whole batch. 400 only when the envelope is wrong.',
    status: 201,
    data: batchAnswer,
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

/** POST /asset's body read by quickAssetBody, and by its zod schema whenever that cannot tell. */
function quickBodyFirst<S>(route: FastifyRouteSchemaDef<S>): FastifyValidationResult {
  const bySchema = validatorCompiler(route as unknown as FastifyRouteSchemaDef<z.ZodType>);
  if (route.httpPart !== 'body') return bySchema;
  return (data) => {
    const value = quickAssetBody(data);
    return value ? { value } : bySchema(data);
  };
}
