// Webhook configuration per App (docs/api.md, Webhooks): URL, signing secret (sealed at rest, rotatable with a grace
// period during which both secrets sign), on/off switch with a visible reason, optional event filter.
// Changes apply to the resends of events already waiting: the dispatcher reads this row at every attempt.
import type { Selectable } from 'kysely';
import type { InfraCtx } from '../config/infra-context.js';
import type { AppEnvironment } from '../domain/environment.js';
import { blockedAdvice, placeOf, webhookPolicy } from './local-delivery.js';
import type { EventType } from '../domain/events.js';
import type { WebhookView } from '../domain/webhook-view.js';
import type { DbOrTx } from '../store/db.js';
import type { WebhookEndpointTable } from '../store/schema.js';
import type { SecretBox } from '../util/secretbox.js';
import { ApiError } from '../util/errors.js';
import { nowIso } from '../util/time.js';
import { assertAllowedUrl, OutboundBlockedError } from '../net/outbound.js';
import { keyId, newWebhookSecret } from '../util/webhook-signing.js';
import { HOUR } from './schedule.js';

export type EndpointRow = Selectable<WebhookEndpointTable>;

/** After a rotation the old secret keeps signing (next to the new one) this long. */
export const ROTATION_GRACE_MS = 24 * HOUR;

/** Every event type, for validating filters. `satisfies` makes tsc fail when a type is added to EventType. */
const EVENT_TYPES = {
  'user.wallet_created': true,
  'user.wallet_exported': true,
  'asset.minted': true,
  'asset.mint_failed': true,
  'asset.edited': true,
  'asset.transferred': true,
  'asset.burned': true,
  'reward.allocated': true,
  'reward.claimed': true,
  'reward.withdrawn': true,
  'item.minted': true,
  'item.transferred': true,
  'item.burned': true,
} satisfies Record<EventType, true>;
export const KNOWN_EVENT_TYPES = Object.keys(EVENT_TYPES) as EventType[];

/** Wakes the dispatcher of this process (e.g. after a redelivery request). */
export const WEBHOOK_SIGNAL = 'webhook.deliver';

export interface WebhookSettings {
  url?: string;
  /** null or [] = every event. */
  events?: string[] | null;
  /** Default true: setting a webhook again re-enables it (e.g. after a 410). */
  enabled?: boolean;
  rotateSecret?: boolean;
}

export type { WebhookView };

export function webhookView(row: EndpointRow, now = Date.now()): WebhookView {
  const prevValid = row.previous_valid_until !== null && row.previous_valid_until > now;
  return {
    app_uid: row.app_uid,
    url: row.url,
    enabled: row.enabled === 1,
    disabled_reason: row.disabled_reason,
    events: row.events_filter ? (JSON.parse(row.events_filter) as string[]) : null,
    key_id: row.key_id,
    previous_key_id: prevValid ? row.previous_key_id : null,
    previous_key_valid_until: prevValid ? new Date(row.previous_valid_until!).toISOString() : null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** The secrets that sign an attempt at `now`: the current one, plus the previous during its grace. */
export function signingSecrets(box: SecretBox, row: EndpointRow, now: number): string[] {
  const secrets = [box.open(row.secret_sealed)];
  if (row.previous_secret_sealed && row.previous_valid_until !== null && row.previous_valid_until > now) secrets.push(box.open(row.previous_secret_sealed));
  return secrets;
}

export async function getEndpoint(db: DbOrTx, appUid: string): Promise<EndpointRow | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('app_uid', '=', appUid).executeTakeFirst();
}

/** Parses `events` input: null/[]/["*"] = all; otherwise known, de-duplicated types. */
export function normaliseEventFilter(events: string[] | null | undefined): string[] | null {
  if (!events) return null;
  const list = [...new Set(events.map((e) => e.trim()).filter(Boolean))];
  if (list.length === 0 || list.includes('*')) return null;
  const unknown = list.filter((e) => !(KNOWN_EVENT_TYPES as string[]).includes(e));
  if (unknown.length)
    throw ApiError.validation([
      { field: 'events', code: 'invalid', message: `Unknown event type(s): ${unknown.join(', ')}. Known: ${KNOWN_EVENT_TYPES.join(', ')}.` },
    ]);
  return list.sort();
}

async function validateUrl(ctx: InfraCtx, url: string, environment: AppEnvironment): Promise<void> {
  const invalid = (message: string) => ApiError.validation([{ field: 'url', code: 'invalid', message }]);
  if (url.length > 2048) throw invalid('Ensure this field has no more than 2048 characters.');
  try {
    await assertAllowedUrl(url, webhookPolicy(placeOf(ctx), environment));
  } catch (err) {
    if (err instanceof OutboundBlockedError) throw invalid(`Webhook URL not allowed: ${err.reason}: ${blockedAdvice(placeOf(ctx), environment, err.reason)}.`);
    // A name that does not resolve yet is accepted: it is checked again at every attempt.
  }
}

/**
 * Creates or changes an App's webhook. Returns the current secret (new when created or rotated).
 * Changing the URL or re-enabling makes waiting events due at once (the hourly cap still applies);
 * re-enabling also brings back events held while it was disabled, if they are still within 72 h.
 * Long: one transaction: the endpoint and its waiting deliveries change together.
 */
export async function setWebhook(
  ctx: InfraCtx,
  appUid: string,
  s: WebhookSettings,
): Promise<{ created: boolean; rotated: boolean; secret: string; webhook: WebhookView }> {
  const app = await ctx.db.selectFrom('apps').select(['uid', 'environment']).where('uid', '=', appUid).executeTakeFirst();
  if (!app) throw ApiError.notFound('App');
  const url = s.url?.trim();
  if (url !== undefined) await validateUrl(ctx, url, app.environment);
  const filter = s.events === undefined ? undefined : normaliseEventFilter(s.events);
  const enabled = s.enabled ?? true;

  const result = await ctx.db.transaction().execute(async (tx) => {
    const now = Date.now();
    const iso = nowIso();
    let existing = await getEndpoint(tx, appUid);
    if (!existing) {
      if (!url) throw ApiError.validation([{ field: 'url', code: 'required', message: 'This field is required.' }]);
      const secret = newWebhookSecret();
      // Two first settings at once (two processes, two operators): one inserts, the other finds its row
      // (the insert waits for the first to commit) and changes it as a second setting would.
      const inserted = await tx
        .insertInto('webhook_endpoints')
        .values({
          app_uid: appUid,
          url,
          secret_sealed: ctx.box.seal(secret),
          key_id: keyId(secret),
          previous_secret_sealed: null,
          previous_key_id: null,
          previous_valid_until: null,
          enabled: enabled ? 1 : 0,
          events_filter: filter ? JSON.stringify(filter) : null,
          disabled_reason: enabled ? null : 'disabled by the operator',
          version: 1,
          created_at: iso,
          updated_at: iso,
        })
        .onConflict((oc) => oc.column('app_uid').doNothing())
        .returning('app_uid')
        .executeTakeFirst();
      if (inserted) return { created: true, rotated: false, secret };
      existing = (await getEndpoint(tx, appUid))!;
    }
    let secret = ctx.box.open(existing.secret_sealed);
    const rotation = s.rotateSecret
      ? (() => {
          const fresh = newWebhookSecret();
          const r = {
            secret_sealed: ctx.box.seal(fresh),
            key_id: keyId(fresh),
            previous_secret_sealed: existing.secret_sealed,
            previous_key_id: existing.key_id,
            previous_valid_until: now + ROTATION_GRACE_MS,
          };
          secret = fresh;
          return r;
        })()
      : {};
    await tx
      .updateTable('webhook_endpoints')
      .set({
        ...(url !== undefined ? { url } : {}),
        ...(filter !== undefined ? { events_filter: filter ? JSON.stringify(filter) : null } : {}),
        ...rotation,
        enabled: enabled ? 1 : 0,
        disabled_reason: enabled ? null : existing.enabled ? 'disabled by the operator' : existing.disabled_reason,
        version: existing.version + 1,
        updated_at: iso,
      })
      .where('app_uid', '=', appUid)
      .execute();
    if (!enabled) {
      await holdPending(tx, appUid, now);
    } else {
      if (!existing.enabled) await releaseHeld(tx, appUid, now);
      if (!existing.enabled || (url !== undefined && url !== existing.url)) {
        await tx
          .updateTable('webhook_deliveries')
          .set({ next_attempt_at: now, updated_at_ms: now })
          .where('app_uid', '=', appUid)
          .where('status', '=', 'pending')
          .where('next_attempt_at', '>', now)
          .execute();
      }
    }
    return { created: false, rotated: !!s.rotateSecret, secret };
  });
  ctx.queue.notify(WEBHOOK_SIGNAL);
  const row = (await getEndpoint(ctx.db, appUid))!;
  return { ...result, webhook: webhookView(row) };
}

/** Pending deliveries of a disabled endpoint wait as `disabled` (until it is enabled again). */
export async function holdPending(tx: DbOrTx, appUid: string, now: number): Promise<void> {
  await tx
    .updateTable('webhook_deliveries')
    .set({ status: 'disabled', next_attempt_at: null, updated_at_ms: now })
    .where('app_uid', '=', appUid)
    .where('status', '=', 'pending')
    .execute();
}

/** On re-enabling: held deliveries still within their window are due now; the others expired meanwhile. */
async function releaseHeld(tx: DbOrTx, appUid: string, now: number): Promise<void> {
  await tx
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', next_attempt_at: now, updated_at_ms: now })
    .where('app_uid', '=', appUid)
    .where('status', '=', 'disabled')
    .where('deadline_at', '>', now)
    .execute();
  await tx
    .updateTable('webhook_deliveries')
    .set({ status: 'expired', next_attempt_at: null, updated_at_ms: now })
    .where('app_uid', '=', appUid)
    .where('status', '=', 'disabled')
    .where('deadline_at', '<=', now)
    .execute();
}

export async function getWebhook(ctx: InfraCtx, appUid: string): Promise<WebhookView | null> {
  const row = await getEndpoint(ctx.db, appUid);
  return row ? webhookView(row) : null;
}
