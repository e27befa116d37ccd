// `mintworks webhook …` (issue 6), the shell twin of the webhook routes of the management API:
//   webhook set --app UID [--url URL] [--events a,b|all] [--rotate-secret] [--disable]   -> {secret, …}
//   webhook show --app UID
//   webhook log --app UID [--event ID] [--limit N]
//   webhook redeliver --app UID --event ID
// `set` prints the signing secret: the new one when created or rotated, else the current one (the
// operator holds MASTER_KEY anyway). A running service picks changes and redeliveries up by polling.
import type { Ctx } from '../services/context.js';
import { flag as flagOf, requireApp as requireAppOf, UsageError, type Flags } from './args.js';
import { ApiError } from '../util/errors.js';
import { getWebhook, setWebhook } from '../webhooks/endpoints.js';
import { getDelivery, listAttempts, listDeliveries, redeliver, type AttemptView, type DeliveryView } from '../webhooks/deliveries.js';

export const WEBHOOK_USAGE = `  webhook set --app UID --url URL [--events a,b] [--rotate-secret] [--disable]
                                                              create or change the App's webhook -> {secret}
  webhook show --app UID                                      the App's webhook configuration
  webhook log --app UID [--event ID] [--limit N]              delivery state and attempt log
  webhook redeliver --app UID --event ID                      send an event again now`;

const usage = (message: string) => new UsageError(`${message}\n\n${WEBHOOK_USAGE}`);
const flag = (flags: Flags, name: string, required: boolean) => flagOf(flags, name, required, WEBHOOK_USAGE);
const requireApp = (ctx: Ctx, flags: Flags) => requireAppOf(ctx.db, flags, WEBHOOK_USAGE);

const attemptLine = (a: AttemptView) => `  #${a.attempt}  ${a.time}  ${a.status_code ?? '---'}  ${String(a.latency_ms).padStart(6)} ms  ${a.url}${a.error ? `  ${a.error}` : ''}`;
const deliveryLine = (d: DeliveryView) =>
  `${d.event_id}  ${d.event.padEnd(20)}  ${d.status.padEnd(9)}  attempts ${d.attempts}${d.next_attempt_at ? `  next ${d.next_attempt_at}` : ''}${d.last_error ? `  last: ${d.last_error}` : ''}`;

export async function webhookCommand(ctx: Ctx, words: string[], flags: Flags): Promise<{ json: unknown; text: string }> {
  const sub = words[1];
  switch (sub) {
    case 'set': {
      const app = await requireApp(ctx, flags);
      const eventsFlag = flag(flags, 'events', false);
      const r = await setWebhook(ctx, app, {
        url: flag(flags, 'url', false),
        events: eventsFlag === undefined ? undefined : eventsFlag === 'all' ? null : eventsFlag.split(','),
        enabled: !(flags.disable === true || flags.disable === 'true'),
        rotateSecret: flags['rotate-secret'] === true || flags['rotate-secret'] === 'true',
      });
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
    case 'show': {
      const app = await requireApp(ctx, flags);
      const w = await getWebhook(ctx, app);
      if (!w) throw ApiError.notFound('Webhook');
      return { json: w, text: `${w.url}  ${w.enabled ? 'enabled' : `disabled (${w.disabled_reason})`}  events: ${w.events ? w.events.join(', ') : 'all'}  key ${w.key_id}` };
    }
    case 'log': {
      const app = await requireApp(ctx, flags);
      const limit = Number(flag(flags, 'limit', false) ?? 50);
      const eventId = flag(flags, 'event', false);
      if (eventId) {
        const delivery = await getDelivery(ctx, app, eventId);
        if (!delivery) throw ApiError.notFound('Event');
        const attempts = await listAttempts(ctx, app, { eventId, limit: 1000 });
        const text = [deliveryLine(delivery), ...attempts.map(attemptLine), ...attempts.filter((a) => a.response).slice(0, 1).map((a) => `  last response: ${a.response}`)].join('\n');
        return { json: { delivery, attempts }, text };
      }
      const deliveries = await listDeliveries(ctx, app, { limit });
      const attempts = await listAttempts(ctx, app, { limit });
      const text = [`Events (newest first):`, ...deliveries.map(deliveryLine), '', 'Attempts (newest first):', ...attempts.map((a) => `${a.event_id}${attemptLine(a)}`)].join('\n');
      return { json: { deliveries, attempts }, text };
    }
    case 'redeliver': {
      const app = await requireApp(ctx, flags);
      const d = await redeliver(ctx, app, flag(flags, 'event', true)!);
      return { json: d, text: `Event ${d.event_id} queued for delivery (attempt ${d.attempts + 1}); the running service sends it.` };
    }
    default:
      throw usage(sub ? `unknown command "webhook ${sub}"` : 'webhook needs a command');
  }
}
