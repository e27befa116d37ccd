// Webhooks (docs/api.md, Webhooks): configuration per App, signed delivery with retries for 72 hours,
// isolation between Apps, and an attempt log. The composition root starts one dispatcher per worker
// process: `const webhooks = webhookDispatcher(ctx); webhooks.start(); … await webhooks.stop();`
import type { InfraCtx } from '../util/infra-context.js';
import { WebhookDispatcher, type DispatcherOptions } from './dispatcher.js';

export function webhookDispatcher(ctx: InfraCtx, opts: DispatcherOptions = {}): WebhookDispatcher {
  return new WebhookDispatcher(ctx, opts);
}

export { WebhookDispatcher, httpSender, type DispatcherOptions, type WebhookSender, type WebhookSendRequest, type WebhookSendResult } from './dispatcher.js';
export { setWebhook, getWebhook, webhookView, KNOWN_EVENT_TYPES, WEBHOOK_SIGNAL, ROTATION_GRACE_MS, type WebhookSettings, type WebhookView } from './endpoints.js';
export { enqueueDelivery, listDeliveries, listAttempts, getDelivery, redeliver, DELIVERY_STATUSES, type DeliveryStatus, type DeliveryView, type AttemptView } from './deliveries.js';
export { buildBody, buildRequest } from './message.js';
export { signatureHeaders, verifyOurSignature, newWebhookSecret, keyId } from './signing.js';
