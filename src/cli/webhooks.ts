// `mintworks webhook …`, the shell twin of the webhook routes of the management API:
//   webhook set --app UID [--url URL] [--events a,b|all] [--rotate-secret] [--disable]   -> {secret, …}
//   webhook show --app UID
//   webhook log --app UID [--event ID] [--limit N]
//   webhook redeliver --app UID --event ID
// `set` prints the signing secret: the new one when created or rotated, else the current one (the
// operator holds MASTER_KEY anyway). A running service picks changes and redeliveries up by polling.
import { auditWebhookSet } from '../services/webhook-audit.js';
import { cliActor } from './keys.js';
import { recordAudit } from '../services/audit.js';
import type { Ctx } from '../services/context.js';
import { requireApp, table, type Output } from './args.js';
import { ApiError } from '../util/errors.js';
import { getWebhook, setWebhook } from '../webhooks/endpoints.js';
import { getDelivery, listAttempts, listDeliveries, redeliver, type AttemptView, type DeliveryView } from '../webhooks/deliveries.js';

const attemptColumns: [string, string][] = [
  ['attempt', '#'],
  ['time', 'time'],
  ['status_code', 'status'],
  ['latency_ms', 'ms'],
  ['url', 'url'],
  ['error', 'error'],
];
const deliveryRows = (ds: DeliveryView[]) => ds.map((d) => ({ ...d, next: d.next_attempt_at, last: d.last_error }));

export async function webhookSet(ctx: Ctx, o: { app: string; url?: string; events?: string; rotateSecret?: boolean; disable?: boolean }): Promise<Output> {
  const app = await requireApp(ctx.db, o.app);
  const r = await setWebhook(ctx, app, {
    url: o.url,
    events:
      o.events === undefined
        ? undefined
        : o.events === 'all'
          ? null
          : o.events
              .split(',')
              .map((e) => e.trim())
              .filter(Boolean),
    enabled: !o.disable,
    rotateSecret: !!o.rotateSecret,
  });
  await auditWebhookSet(ctx, cliActor(), app, r);
  const w = r.webhook;
  const what = r.created ? 'created' : r.rotated ? 'updated, secret rotated (the old one signs too for 24 h)' : 'updated';
  return {
    json: { secret: r.secret, ...w, created: r.created, rotated: r.rotated },
    text: [
      `Webhook of App ${app} ${what}.`,
      `  url      ${w.url}`,
      `  enabled  ${w.enabled ? 'yes' : `no (${w.disabled_reason})`}`,
      `  events   ${w.events ? w.events.join(', ') : 'all'}`,
      `  secret   ${r.secret}   (key id ${w.key_id}; verify with standardwebhooks or x-webhook-signature)`,
    ].join('\n'),
  };
}

export async function webhookShow(ctx: Ctx, o: { app: string }): Promise<Output> {
  const app = await requireApp(ctx.db, o.app);
  const w = await getWebhook(ctx, app);
  if (!w) throw ApiError.notFound('Webhook');
  return {
    json: w,
    text: `${w.url}  ${w.enabled ? 'enabled' : `disabled (${w.disabled_reason})`}  events: ${w.events ? w.events.join(', ') : 'all'}  key ${w.key_id}`,
  };
}

export async function webhookLog(ctx: Ctx, o: { app: string; event?: string; limit: number }): Promise<Output> {
  const app = await requireApp(ctx.db, o.app);
  if (o.event) {
    const delivery = await getDelivery(ctx, app, o.event);
    if (!delivery) throw ApiError.notFound('Event');
    const attempts = await listAttempts(ctx, app, { eventId: o.event, limit: 1000 });
    const last = attempts.find((a) => a.response)?.response;
    const text = [
      `${delivery.event_id}  ${delivery.event}  ${delivery.status}  attempts ${delivery.attempts}${delivery.next_attempt_at ? `  next ${delivery.next_attempt_at}` : ''}`,
      '',
      table(attempts as unknown as Record<string, unknown>[], attemptColumns, '(no attempts yet)'),
      ...(last ? ['', `last response: ${last}`] : []),
    ].join('\n');
    return { json: { delivery, attempts }, text };
  }
  const deliveries = await listDeliveries(ctx, app, { limit: o.limit });
  const attempts = await listAttempts(ctx, app, { limit: o.limit });
  const text = [
    'Events (newest first):',
    table(
      deliveryRows(deliveries),
      [
        ['event_id', 'event id'],
        ['event', 'type'],
        ['status', 'status'],
        ['attempts', 'attempts'],
        ['next', 'next attempt'],
        ['last', 'last error'],
      ],
      '(none)',
    ),
    '',
    'Attempts (newest first):',
    table(attempts as AttemptView[] as unknown as Record<string, unknown>[], [['event_id', 'event id'], ...attemptColumns], '(none)'),
  ].join('\n');
  return { json: { deliveries, attempts }, text };
}

export async function webhookRedeliver(ctx: Ctx, o: { app: string; event: string }): Promise<Output> {
  const app = await requireApp(ctx.db, o.app);
  const d = await redeliver(ctx, app, o.event);
  await recordAudit(ctx.db, cliActor(), { action: 'webhook.redelivered', app_uid: app, details: { event: o.event } });
  return { json: d, text: `Event ${d.event_id} queued for delivery (attempt ${d.attempts + 1}); the running service sends it.` };
}
