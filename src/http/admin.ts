// Management API (docs/api.md, Management API): not reachable with an App's key; the operator token is
// required (operatorGuard, the onRequest hook of the /admin/v1 scope in app.ts, in front of every route
// registered here).
import { timingSafeEqual, createHash } from 'node:crypto';
import { sendPage } from './paging.js';
import { listUsersOfApp } from '../services/users.js';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Ctx } from '../services/context.js';
import { ApiError } from '../util/errors.js';
import { createApp, listApps } from '../services/apps.js';
import { createCollection, listCollectionsOfApp } from '../services/collections.js';
import { adminWebhookRoutes } from './admin-webhooks.js';
import { adminRewardRoutes } from './rewards.js';
import { pageQuery, str } from './schemas.js';
import { notFound } from './envelope.js';
import { ok, requireApp, type App } from './route-kit.js';

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
  // Unknown paths here run the scope's operator check too: without the token they answer 401, not 404,
  // so the management API's surface is not probeable without it.
  app.setNotFoundHandler(async () => {
    throw notFound();
  });
  const tags = { tags: ['admin'] };
  const appParam = z.object({ uid: str() });

  app.get('/apps', { schema: tags }, async () => ok((await listApps(ctx)).map((a) => ({ uid: a.uid, name: a.name, environment: a.environment, created_at: a.created_at }))));

  app.post('/apps', { schema: { ...tags, body: z.object({ name: str().min(1).max(100), environment: z.enum(['development', 'production']).default('development') }) } }, async (req, reply) => {
    return reply.code(201).send(ok(await createApp(ctx, req.body.name, req.body.environment)));
  });

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
        body: z.object({ name: str().min(1).max(100), symbol: str().min(1).max(16), editable_assets: z.boolean().default(false), description: str().max(2000).nullish(), external_url: str().url().nullish(), chain_id: z.number().int().positive().nullish() }),
      },
    },
    async (req, reply) => {
      await requireApp(ctx, req.params.uid);
      const b = req.body;
      return reply.code(201).send(ok(await createCollection(ctx, req.params.uid, { name: b.name, symbol: b.symbol, editable: b.editable_assets, description: b.description, external_url: b.external_url, chain_id: b.chain_id })));
    },
  );

  app.get('/apps/:uid/users', { schema: { ...tags, params: appParam, querystring: z.object(pageQuery) } }, async (req, reply) => {
    await requireApp(ctx, req.params.uid);
    return ok(sendPage(req, reply, ctx.config.publicUrl, await listUsersOfApp(ctx, req.params.uid, req.query)));
  });

  await adminWebhookRoutes(app, ctx);
  await adminRewardRoutes(app, ctx);
}
