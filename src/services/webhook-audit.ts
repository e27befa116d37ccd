// The audit entry of a webhook set by the operator (management API, console, CLI): its URL as origin
// only (Slack and Discord keep their secret in the path), the events and whether it is on.
import type { Ctx } from './context.js';
import { recordAudit, type Actor } from './audit.js';
import { redactUrl } from '../net/redact-url.js';

export async function auditWebhookSet(
  ctx: Pick<Ctx, 'db'>,
  actor: Actor,
  appUid: string,
  r: { created: boolean; rotated: boolean; webhook: { url: string; events?: unknown; enabled?: unknown } },
): Promise<void> {
  await recordAudit(ctx.db, actor, {
    action: r.created ? 'webhook.created' : r.rotated ? 'webhook.secret_rotated' : 'webhook.changed',
    app_uid: appUid,
    details: { url: redactUrl(r.webhook.url), events: r.webhook.events ?? null, enabled: r.webhook.enabled ?? null },
  });
}
