// Management API (docs/api.md, Management API): not reachable with an App's key; the operator token is required.
import { timingSafeEqual, createHash } from 'node:crypto';
import { sendPage } from './paging.js';
import { listUsersOfApp } from '../services/users.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Ctx } from '../services/context.js';
import { ApiError } from '../util/errors.js';
import { createApp, getApp, listApps } from '../services/apps.js';
import { createCollection } from '../services/collections.js';
import { collectionView } from '../services/views.js';
import { adminWebhookRoutes } from './admin-webhooks.js';
import { adminRewardRoutes } from './rewards.js';
import { pageQuery, str } from './schemas.js';
import { notFound } from './envelope.js';

type App = FastifyInstance<any, any, any, any, ZodTypeProvider>;
const ok = (data: unknown) => ({ success: true, data });
const digest = (s: string) => createHash('sha256').update(s).digest();

/** The operator token check, for every request under /admin/v1: routes, unknown paths and bad URLs alike. */
export function operatorGuard(ctx: Ctx) {
  const expected = digest(ctx.config.operatorToken ?? '');
  return async (req: FastifyRequest): Promise<void> => {
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!ctx.config.operatorToken || !m || !timingSafeEqual(digest(m[1]), expected)) {
      throw ApiError.client(401, 'unauthorized', 'Operator token required (Authorization: Bearer <OPERATOR_TOKEN>).');
    }
  };
}

export async function adminRoutes(app: App, ctx: Ctx): Promise<void> {
  app.addHook('onRequest', operatorGuard(ctx));
  // Unknown paths here run the hook above too: without the token they answer 401, not 404, so the
  // management API's surface is not probeable without it.
  app.setNotFoundHandler(async () => {
    throw notFound();
  });
  const tags = { tags: ['admin'] };
  const appParam = z.object({ uid: str() });
  const requireApp = async (uid: string) => {
    const a = await getApp(ctx, uid);
    if (!a) throw ApiError.notFound('App');
    return a;
  };

  app.get('/apps', { schema: tags }, async () => ok((await listApps(ctx)).map((a) => ({ uid: a.uid, name: a.name, environment: a.environment, created_at: a.created_at }))));

  app.post('/apps', { schema: { ...tags, body: z.object({ name: str().min(1).max(100), environment: z.enum(['development', 'production']).default('development') }) } }, async (req, reply) => {
    return reply.code(201).send(ok(await createApp(ctx, req.body.name, req.body.environment)));
  });

  app.get('/apps/:uid/collections', { schema: { ...tags, params: appParam } }, async (req) => {
    await requireApp(req.params.uid);
    const rows = await ctx.db.selectFrom('collections').selectAll().where('app_uid', '=', req.params.uid).orderBy('created_at', 'desc').execute();
    return ok(rows.map((c) => collectionView(c, ctx.config)));
  });

  app.post(
    '/apps/:uid/collections',
    {
      schema: {
        ...tags,
        params: appParam,
        body: z.object({ name: str().min(1).max(100), symbol: str().min(1).max(16), editable_assets: z.boolean().default(false), description: str().max(2000).nullish(), external_url: str().url().nullish() }),
      },
    },
    async (req, reply) => {
      await requireApp(req.params.uid);
      const b = req.body;
      return reply.code(201).send(ok(await createCollection(ctx, req.params.uid, { name: b.name, symbol: b.symbol, editable: b.editable_assets, description: b.description, external_url: b.external_url })));
    },
  );

  app.get('/apps/:uid/users', { schema: { ...tags, params: appParam, querystring: z.object(pageQuery) } }, async (req, reply) => {
    await requireApp(req.params.uid);
    return ok(sendPage(req, reply, ctx.config.publicUrl, await listUsersOfApp(ctx, req.params.uid, req.query)));
  });

  await adminWebhookRoutes(app, ctx);
  await adminRewardRoutes(app, ctx);
}
