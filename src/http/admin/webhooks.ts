// Management API for webhooks (docs/api.md, Webhooks), under /admin/v1: the operator token is checked by
// the hook of that scope (src/http/admin/index.ts); the console mounts the same routes behind its session.
//   PUT  /apps/:uid/webhook                          create or change (url, events, enabled, rotate_secret)
//   GET  /apps/:uid/webhook                          the configuration (never the secret)
//   GET  /apps/:uid/webhook/events?status=&limit=    delivery state per event, newest first
//   GET  /apps/:uid/webhook/events/:id/attempts      the attempt log of one event, newest first
//   POST /apps/:uid/webhook/events/:id/redeliver     send an event again now
import { auditWebhookSet } from '../../services/webhook-audit.js';
import { requestActor } from '../kit/actor.js';
import { recordAudit } from '../../services/audit.js';
import { z } from 'zod';
import type { Ctx } from '../../services/context.js';
import { ApiError } from '../../util/errors.js';
import { getWebhook, setWebhook } from '../../webhooks/endpoints.js';
import { str } from '../kit/schemas.js';
import { ok, requireApp, type App } from '../kit/route-kit.js';
import { DELIVERY_STATUSES, getDelivery, listAttempts, listDeliveries, redeliver, type DeliveryStatus } from '../../webhooks/deliveries.js';
import { attemptObject, deliveryObject, webhookObject, list } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';

// Long: one table of routes, a short entry each.
export async function adminWebhookRoutes(app: App, ctx: Ctx): Promise<void> {
  const tags = { tags: ['admin', 'webhooks'] };
  const appParam = z.object({ uid: str() });
  const eventParam = z.object({ uid: str(), id: str() });

  app.put(
    '/apps/:uid/webhook',
    {
      schema: {
        ...tags,
        params: appParam,
        body: z.object({
          url: str().min(1).max(2048).optional(),
          events: z.array(str()).max(50).nullish().describe('Event types to send; null or [] = all.'),
          enabled: z.boolean().optional().describe('Default true: setting the webhook again re-enables it.'),
          rotate_secret: z.boolean().optional().describe('New signing secret; the old one keeps signing for 24 h.'),
        }),
      },
    },
    async (req, reply) => {
      const b = req.body;
      const r = await setWebhook(ctx, req.params.uid, { url: b.url, events: b.events, enabled: b.enabled, rotateSecret: b.rotate_secret });
      await auditWebhookSet(ctx, requestActor(req), req.params.uid, r);
      // The secret is shown when it is new (created or rotated), like an API secret.
      const data = r.created || r.rotated ? { ...r.webhook, secret: r.secret } : r.webhook;
      return reply.code(r.created ? 201 : 200).send(ok(data));
    },
  );

  app.get('/apps/:uid/webhook', { schema: { ...tags, params: appParam } }, async (req) => {
    await requireApp(ctx, req.params.uid);
    const wh = await getWebhook(ctx, req.params.uid);
    if (!wh) throw ApiError.notFound('Webhook');
    return ok(wh);
  });

  app.get(
    '/apps/:uid/webhook/events',
    {
      schema: {
        ...tags,
        params: appParam,
        querystring: z.object({
          status: z.enum(DELIVERY_STATUSES as [DeliveryStatus, ...DeliveryStatus[]]).optional(),
          limit: z.coerce.number().int().min(1).max(1000).optional(),
        }),
      },
    },
    async (req) => {
      await requireApp(ctx, req.params.uid);
      return ok(await listDeliveries(ctx, req.params.uid, { status: req.query.status, limit: req.query.limit }));
    },
  );

  app.get('/apps/:uid/webhook/events/:id/attempts', { schema: { ...tags, params: eventParam } }, async (req) => {
    await requireApp(ctx, req.params.uid);
    const d = await getDelivery(ctx, req.params.uid, req.params.id);
    if (!d) throw ApiError.notFound('Event');
    return ok(await listAttempts(ctx, req.params.uid, { eventId: req.params.id, limit: 1000 }));
  });

  app.post('/apps/:uid/webhook/events/:id/redeliver', { schema: { ...tags, params: eventParam } }, async (req) => {
    await requireApp(ctx, req.params.uid);
    const d = await redeliver(ctx, req.params.uid, req.params.id);
    await recordAudit(ctx.db, requestActor(req), { action: 'webhook.redelivered', app_uid: req.params.uid, details: { event: req.params.id } });
    return ok(d);
  });
}

/** What /openapi.json says of these routes' answers: joined to them as they are registered (a route without one fails to register). */
export const webhooksDocs = {
  'PUT /apps/:uid/webhook': {
    operationId: 'adminPutWebhook',
    summary: "Create or change the App's webhook",
    description: '201 when created, 200 when changed; `secret` only when created or rotated.',
    status: 200,
    alsoOk: 201,
    data: webhookObject,
  },
  'GET /apps/:uid/webhook': { operationId: 'adminGetWebhook', summary: "The App's webhook configuration", data: webhookObject },
  'GET /apps/:uid/webhook/events': {
    operationId: 'adminListWebhookEvents',
    summary: 'Delivery state per event, newest first',
    data: list(deliveryObject),
  },
  'GET /apps/:uid/webhook/events/:id/attempts': {
    operationId: 'adminListWebhookAttempts',
    summary: 'The attempt log of one event, newest first',
    data: list(attemptObject),
  },
  'POST /apps/:uid/webhook/events/:id/redeliver': {
    operationId: 'adminRedeliverWebhookEvent',
    summary: 'Send an event again now',
    data: deliveryObject,
  },
} satisfies RouteDocs;
