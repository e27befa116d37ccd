// The console's webhook page: the management routes of the webhook, its settings, the delivery log, a test event.
import { requestActor } from '../kit/actor.js';
import { recordAudit } from '../../services/audit.js';
import { z } from 'zod';
import { KNOWN_EVENT_TYPES, getWebhook } from '../../webhooks/endpoints.js';
import { deliveryLog } from '../../services/console/queries.js';
import { sendTestEvent } from '../../services/console/webhook-test.js';
import { str } from '../kit/schemas.js';
import { ok } from '../kit/route-kit.js';
import { adminWebhookRoutes } from '../admin/webhooks.js';
import { appFinder, appParam, page, type ConsolePage } from './kit.js';

export const webhookPages: ConsolePage = async (app, deps) => {
  const { ctx } = deps;
  const requireApp = appFinder(ctx);
  await adminWebhookRoutes(app, ctx); // PUT/GET /apps/:uid/webhook, events, attempts, redeliver

  // The configuration (null when there is none) with the event types a filter may name.
  app.get('/apps/:uid/webhook/settings', { schema: { params: appParam } }, async (req) => {
    const uid = await requireApp(req.params.uid);
    return ok({ webhook: await getWebhook(ctx, uid), event_types: KNOWN_EVENT_TYPES });
  });

  app.get(
    '/apps/:uid/webhook/log',
    {
      schema: {
        params: appParam,
        querystring: z.object({ ...page, status: z.enum(['pending', 'delivered', 'expired', 'disabled']).optional(), event_id: str().max(64).optional() }),
      },
    },
    async (req) => {
      const q = req.query;
      return ok(await deliveryLog(ctx, await requireApp(req.params.uid), { cursor: q.cursor, limit: q.limit, status: q.status, eventId: q.event_id }));
    },
  );

  // A `webhook.test` event, sent at once whatever the event filter says.
  app.post('/apps/:uid/webhook/test', { schema: { params: appParam } }, async (req, reply) => {
    const uid = await requireApp(req.params.uid);
    const r = await sendTestEvent(ctx, uid);
    await recordAudit(ctx.db, requestActor(req), { action: 'webhook.tested', app_uid: uid, details: {} });
    return reply.code(201).send(ok(r));
  });
};
