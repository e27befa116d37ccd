// The public API v1. Handlers read as the use case: validate, call the service, envelope.
import type { Ctx } from '../services/context.js';
import { ApiError } from '../util/errors.js';
import * as s from './schemas.js';
import { ok, uidOr404, type App } from './route-kit.js';
import { sendPage } from './paging.js';
import { createUser, findUser, getUser } from '../services/users.js';
import { getCollection } from '../services/collections.js';
import { getAsset, listAssetsOfUser } from '../services/assets.js';
import { createAsset } from '../services/asset-create.js';
import { depositInfo } from '../services/wallets.js';
import { rewardRoutes } from './rewards.js';
import { createBurn, createTransfer, editAsset, getBurn, getTransfer, listBurns, listTransfers } from '../services/lifecycle.js';

export async function publicRoutes(app: App, ctx: Ctx): Promise<void> {
  const tags = (t: string) => ({ tags: [t] });

  app.post('/user', { schema: { ...tags('users'), body: s.createUserBody } }, async (req, reply) => {
    return reply.code(201).send(ok(await createUser(ctx, req.appUid, req.body ?? {}, req.idempotency)));
  });

  app.get('/user/:uid', { schema: { ...tags('users'), params: s.uidParam } }, async (req) => {
    return ok(await getUser(ctx, req.appUid, uidOr404(req.params.uid, 'User')));
  });

  app.get('/user', { schema: { ...tags('users'), querystring: s.userLookupQuery } }, async (req) => {
    const q = req.query;
    if (q.email !== undefined) return ok(await findUser(ctx, req.appUid, 'email', q.email));
    const ext = q.user_external_id ?? q.client_id;
    if (ext !== undefined) return ok(await findUser(ctx, req.appUid, 'user_external_id', ext));
    throw ApiError.client(404, 'not_found', 'Not Found');
  });

  app.get('/collection/:uid', { schema: { ...tags('collections'), params: s.uidParam } }, async (req) => {
    return ok(await getCollection(ctx, req.appUid, uidOr404(req.params.uid, 'Collection')));
  });

  app.post('/asset', { schema: { ...tags('assets'), body: s.createAssetBody } }, async (req, reply) => {
    return reply.code(201).send(ok(await createAsset(ctx, req.appUid, req.appEnvironment, req.body, req.idempotency)));
  });

  app.get('/asset/:uid', { schema: { ...tags('assets'), params: s.uidParam } }, async (req) => {
    return ok(await getAsset(ctx, req.appUid, uidOr404(req.params.uid, 'Asset')));
  });

  app.get('/asset', { schema: { ...tags('assets'), querystring: s.assetListQuery } }, async (req, reply) => {
    const { user_uid, ...page } = req.query;
    if (user_uid === undefined) throw ApiError.client(404, 'not_found', 'Not Found');
    return ok(sendPage(req, reply, ctx.config.publicUrl, await listAssetsOfUser(ctx, req.appUid, user_uid, page)));
  });

  app.put('/asset/:uid', { schema: { ...tags('assets'), params: s.uidParam, body: s.editAssetBody } }, async (req) => {
    return ok(await editAsset(ctx, req.appUid, uidOr404(req.params.uid, 'Asset'), req.body.data, req.idempotency));
  });

  app.post('/transfer', { schema: { ...tags('transfers'), body: s.transferBody } }, async (req, reply) => {
    return reply.code(201).send(ok(await createTransfer(ctx, req.appUid, req.body, req.idempotency)));
  });

  app.get('/transfer/:uid', { schema: { ...tags('transfers'), params: s.uidParam } }, async (req) => {
    return ok(await getTransfer(ctx, req.appUid, uidOr404(req.params.uid, 'Transfer')));
  });

  app.get('/transfer', { schema: { ...tags('transfers'), querystring: s.userListQuery } }, async (req, reply) => {
    const { user_uid, ...page } = req.query;
    if (user_uid === undefined) throw ApiError.client(404, 'not_found', 'Not Found');
    return ok(sendPage(req, reply, ctx.config.publicUrl, await listTransfers(ctx, req.appUid, user_uid, page)));
  });

  app.post('/burn', { schema: { ...tags('burns'), body: s.burnBody } }, async (req, reply) => {
    return reply.code(201).send(ok(await createBurn(ctx, req.appUid, req.body, req.idempotency)));
  });

  app.get('/burn/:uid', { schema: { ...tags('burns'), params: s.uidParam } }, async (req) => {
    return ok(await getBurn(ctx, req.appUid, uidOr404(req.params.uid, 'Burn')));
  });

  app.get('/burn', { schema: { ...tags('burns'), querystring: s.userListQuery } }, async (req, reply) => {
    const { user_uid, ...page } = req.query;
    if (user_uid === undefined) throw ApiError.client(404, 'not_found', 'Not Found');
    return ok(sendPage(req, reply, ctx.config.publicUrl, await listBurns(ctx, req.appUid, user_uid, page)));
  });

  app.get('/deposit', { schema: { ...tags('deposits'), querystring: s.depositQuery } }, async (req) => {
    const { user_uid, collection_uid } = req.query;
    return ok(await depositInfo(ctx, req.appUid, uidOr404(user_uid, 'User'), uidOr404(collection_uid, 'Collection')));
  });

  await rewardRoutes(app, ctx);
}
