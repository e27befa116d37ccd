// Webhooks (docs/webhooks.md): configuration per App, signed delivery with retries for 72 hours,
// isolation between Apps, and an attempt log. The composition root starts one dispatcher per worker
// process: `const webhooks = webhookDispatcher(ctx); webhooks.start(); … await webhooks.stop();`.
// Use cases import the module they need (endpoints.ts, deliveries.ts, signing.ts) directly.
import type { InfraCtx } from '../config/infra-context.js';
import { WebhookDispatcher, type DispatcherOptions } from './dispatcher.js';

export function webhookDispatcher(ctx: InfraCtx, opts: DispatcherOptions = {}): WebhookDispatcher {
  return new WebhookDispatcher(ctx, opts);
}

export { setWebhook } from './endpoints.js';
export type { DispatcherOptions } from './dispatcher.js';
