// /admin/v1/apps: Apps, their collections and their users (docs/api.md, Management API). Behind the
// operator token (the hook of the /admin/v1 scope, src/http/admin/index.ts).
import { sendPage } from '../kit/paging.js';
import { listUsersOfApp } from '../../services/users/users.js';
import { z } from 'zod';
import type { Ctx } from '../../services/context.js';
import { createApp, listApps } from '../../services/apps/registry.js';
import { createCollection, listCollectionsOfApp } from '../../services/collections/collections.js';
import { collectionStandard, pageQuery, str } from '../kit/schemas.js';
import { ok, requireApp, type App } from '../kit/route-kit.js';
import { requestActor } from '../kit/actor.js';
import { adminUserObject, appSummary, collectionObject, created, newApp, list, paged } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';

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
            },
            requestActor(req),
          ),
        ),
      );
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
  'GET /apps/:uid/collections': { operationId: 'adminListCollections', summary: "List an App's collections", data: list(collectionObject) },
  'POST /apps/:uid/collections': {
    operationId: 'adminCreateCollection',
    summary: 'Create a collection',
    description: 'Deployed by the workers: `status` goes from deploying to deployed.',
    status: 201,
    data: created,
  },
  'GET /apps/:uid/users': { operationId: 'adminListUsers', summary: "List an App's users", description: paged.trim(), data: list(adminUserObject) },
} satisfies RouteDocs;
