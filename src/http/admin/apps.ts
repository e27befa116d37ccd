// /admin/v1/apps: Apps, their collections and their users (docs/api.md, Management API). Behind the
// operator token (the hook of the /admin/v1 scope, src/http/admin/index.ts).
import { sendPage } from '../kit/paging.js';
import { listUsersOfApp } from '../../services/users/users.js';
import { z } from 'zod';
import type { Ctx } from '../../services/context.js';
import { createApp, listApps } from '../../services/apps/registry.js';
import { createCollection, getCollection, listCollectionsOfApp } from '../../services/collections/collections.js';
import { updateCollection } from '../../services/collections/info.js';
import { collectionStandard, pageQuery, str } from '../kit/schemas.js';
import { ok, requireApp, uidOr404, type App } from '../kit/route-kit.js';
import { requestActor } from '../kit/actor.js';
import { adminCollectionObject, adminUserObject, appSummary, collectionObject, created, newApp, list, paged } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';
import { MAX_ROYALTY_BPS } from '../../domain/collection-options.js';

/** The collection options that creation and PATCH share (checked further in domain/collection-options.ts). */
const collectionOptionFields = {
  royalty_receiver: str().max(100).nullable().optional(),
  royalty_bps: z.number().int().min(0).max(MAX_ROYALTY_BPS).nullable().optional(),
  image_url: str().url().max(2000).nullable().optional(),
};

// Long: one table of routes, a short entry each.
export async function adminAppRoutes(app: App, ctx: Ctx): Promise<void> {
  const tags = { tags: ['admin'] };
  const appParam = z.object({ uid: str() });

  app.get('/apps', { schema: tags }, async () =>
    ok((await listApps(ctx)).map((a) => ({ uid: a.uid, name: a.name, environment: a.environment, created_at: a.created_at }))),
  );

  app.post(
    '/apps',
    { schema: { ...tags, body: z.object({ name: str().min(1).max(100), environment: z.enum(['development', 'production']).default('development') }) } },
    async (req, reply) => {
      return reply.code(201).send(ok(await createApp(ctx, req.body.name, req.body.environment, requestActor(req))));
    },
  );

  app.get('/apps/:uid/collections', { schema: { ...tags, params: appParam } }, async (req) => {
    await requireApp(ctx, req.params.uid);
    return ok(await listCollectionsOfApp(ctx, req.params.uid));
  });

  app.post(
    '/apps/:uid/collections',
    {
      schema: {
        ...tags,
        params: appParam,
        body: z.object({
          name: str().min(1).max(100),
          symbol: str().min(1).max(16),
          editable_assets: z.boolean().default(false),
          description: str().max(2000).nullish(),
          external_url: str().url().nullish(),
          chain_id: z.number().int().positive().nullish(),
          standard: collectionStandard,
          ...collectionOptionFields,
          soulbound: z.boolean().nullish(),
        }),
      },
    },
    async (req, reply) => {
      await requireApp(ctx, req.params.uid);
      const b = req.body;
      return reply.code(201).send(
        ok(
          await createCollection(
            ctx,
            req.params.uid,
            {
              name: b.name,
              symbol: b.symbol,
              editable: b.editable_assets,
              description: b.description,
              external_url: b.external_url,
              chain_id: b.chain_id,
              standard: b.standard,
              soulbound: b.soulbound,
              royalty_receiver: b.royalty_receiver,
              royalty_bps: b.royalty_bps,
              image_url: b.image_url,
            },
            requestActor(req),
          ),
        ),
      );
    },
  );

  // The changeable options; an absent field stays as it is, null clears it.
  app.patch(
    '/apps/:uid/collections/:collection',
    {
      schema: {
        ...tags,
        params: z.object({ uid: str(), collection: str() }),
        body: z
          .object({ description: str().max(2000).nullable().optional(), external_url: str().url().nullable().optional(), ...collectionOptionFields })
          .strict(),
      },
    },
    async (req) => {
      await requireApp(ctx, req.params.uid);
      const collection = uidOr404(req.params.collection, 'Collection');
      await updateCollection(ctx, req.params.uid, collection, req.body, requestActor(req));
      return ok(await getCollection(ctx, req.params.uid, collection));
    },
  );

  app.get('/apps/:uid/users', { schema: { ...tags, params: appParam, querystring: z.object(pageQuery) } }, async (req, reply) => {
    await requireApp(ctx, req.params.uid);
    return ok(sendPage(req, reply, ctx.installation.publicUrl, await listUsersOfApp(ctx, req.params.uid, req.query)));
  });
}

/** What /openapi.json says of these routes' answers: joined to them as they are registered (a route without one fails to register). */
export const appsDocs = {
  'GET /apps': { operationId: 'adminListApps', summary: 'List Apps', data: list(appSummary) },
  'POST /apps': { operationId: 'adminCreateApp', summary: 'Create an App', description: 'The API secret is shown once.', status: 201, data: newApp },
  'GET /apps/:uid/collections': { operationId: 'adminListCollections', summary: "List an App's collections", data: list(adminCollectionObject) },
  'POST /apps/:uid/collections': {
    operationId: 'adminCreateCollection',
    summary: 'Create a collection',
    description:
      'Deployed by the workers: `status` goes from deploying to deployed. Options: `soulbound` (ERC-5192, fixed), `royalty_receiver` and `royalty_bps` (ERC-2981, set together), `description`, `image_url`, `external_url` (the ERC-7572 contract document).',
    status: 201,
    data: created,
  },
  'PATCH /apps/:uid/collections/:collection': {
    operationId: 'adminUpdateCollection',
    summary: "Change a collection's royalty or contract document",
    description:
      'Absent fields stay, null clears one. The new contract document is stored, then `setCollectionInfo` sets the royalty and `contractURI()` on chain (`ContractURIUpdated`). `soulbound` cannot be changed.',
    data: collectionObject,
  },
  'GET /apps/:uid/users': { operationId: 'adminListUsers', summary: "List an App's users", description: paged.trim(), data: list(adminUserObject) },
} satisfies RouteDocs;
