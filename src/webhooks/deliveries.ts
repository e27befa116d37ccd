// Delivery state per event and the attempt log: what the console, the management API and
// the CLI show, and the two ways a delivery starts: with its event, or by a manual redelivery.
//
// Which events are delivered: those emitted while the App has a webhook configured (and that pass its
// event filter). A delivery row is written in the same transaction as the event, so no event can be
// missed or delivered twice by a crash in between. Events from before the webhook was configured are
// not sent by themselves (a new endpoint should not be flooded with history); an operator can still
// send any of them with a redelivery. Events emitted while the webhook is disabled are kept as
// `disabled` and sent when it is enabled again, if that is within their 72 hours.
import type { Insertable, Selectable } from 'kysely';
import type { InfraCtx } from '../config/infra-context.js';
import type { DbOrTx } from '../store/db.js';
import type { WebhookAttemptTable, WebhookDeliveryTable } from '../store/schema.js';
import { ApiError } from '../util/errors.js';
import { isoOfMs } from './message.js';
import { deadlineFor, REDELIVERY_WINDOW_MS } from './schedule.js';
import { getEndpoint, WEBHOOK_SIGNAL } from './endpoints.js';

export type DeliveryRow = Selectable<WebhookDeliveryTable>;
export type AttemptRow = Selectable<WebhookAttemptTable>;
export type DeliveryStatus = WebhookDeliveryTable['status'];
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['pending', 'delivered', 'expired', 'disabled'];

/** Columns of a delivery row that has not been attempted yet. */
const NOT_ATTEMPTED = {
  attempts: 0,
  last_attempt_at: null,
  last_status_code: null,
  last_error: null,
  delivered_at: null,
  recent_attempts: '[]',
  lease_until: null,
  locked_by: null,
} as const;

/**
 * The delivery rows for events of one App and type (none without a webhook, or when its filter leaves
 * the type out), for a caller that inserts them together with the events (emitEvents).
 */
export async function deliveryRows(
  tx: DbOrTx,
  appUid: string,
  type: string,
  eventTimeMs: number,
  eventIds: string[],
): Promise<Insertable<WebhookDeliveryTable>[]> {
  if (eventIds.length === 0) return [];
  const ep = await tx.selectFrom('webhook_endpoints').select(['enabled', 'events_filter']).where('app_uid', '=', appUid).executeTakeFirst();
  if (!ep) return [];
  if (ep.events_filter && !(JSON.parse(ep.events_filter) as string[]).includes(type)) return [];
  return eventIds.map((eventId) => ({
    event_id: eventId,
    app_uid: appUid,
    event_type: type,
    status: ep.enabled ? ('pending' as const) : ('disabled' as const),
    event_time_ms: eventTimeMs,
    deadline_at: deadlineFor(eventTimeMs),
    next_attempt_at: ep.enabled ? eventTimeMs : null,
    ...NOT_ATTEMPTED,
    created_at_ms: eventTimeMs,
    updated_at_ms: eventTimeMs,
  }));
}

export interface DeliveryView {
  event_id: string;
  event: string;
  event_time: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: string | null;
  expires_at: string;
}

const iso = (ms: number | null) => (ms === null ? null : isoOfMs(ms));

export function deliveryView(r: DeliveryRow & { event_time?: string }): DeliveryView {
  return {
    event_id: r.event_id,
    event: r.event_type,
    event_time: r.event_time ?? isoOfMs(r.event_time_ms),
    status: r.status,
    attempts: r.attempts,
    next_attempt_at: r.status === 'pending' ? iso(r.next_attempt_at) : null,
    last_attempt_at: iso(r.last_attempt_at),
    last_status_code: r.last_status_code,
    last_error: r.last_error,
    delivered_at: iso(r.delivered_at),
    expires_at: isoOfMs(r.deadline_at),
  };
}

export interface AttemptView {
  event_id: string;
  attempt: number;
  time: string;
  url: string;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  response: string | null;
}

export function attemptView(a: AttemptRow): AttemptView {
  return {
    event_id: a.event_id,
    attempt: a.attempt,
    time: isoOfMs(a.attempted_at),
    url: a.url,
    status_code: a.status_code,
    latency_ms: a.latency_ms,
    error: a.error,
    response: a.response_body,
  };
}

/** An App's deliveries with their events' time: the base of the management API's and the console's logs. */
export function deliveriesOf(ctx: InfraCtx, appUid: string) {
  return ctx.db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .selectAll('d')
    .select('e.event_time')
    .where('d.app_uid', '=', appUid);
}

/** Deliveries still open (pending, disabled), counted by status over every App (the metrics gauge). */
export async function openDeliveryCounts(ctx: InfraCtx): Promise<{ status: DeliveryStatus; n: number }[]> {
  // Only the open ones: counting every delivery ever made would read the whole table on each scrape.
  const rows = await ctx.db
    .selectFrom('webhook_deliveries')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('status', 'in', ['pending', 'disabled'])
    .groupBy('status')
    .execute();
  return rows.map((r) => ({ status: r.status, n: Number(r.n) }));
}

/** Deliveries of an App, newest event first. */
export async function listDeliveries(ctx: InfraCtx, appUid: string, opts: { status?: DeliveryStatus; limit?: number } = {}): Promise<DeliveryView[]> {
  let q = deliveriesOf(ctx, appUid);
  if (opts.status) q = q.where('d.status', '=', opts.status);
  const rows = await q.orderBy('d.event_time_ms', 'desc').orderBy('e.seq', 'desc').limit(clampLimit(opts.limit)).execute();
  return rows.map(deliveryView);
}

export async function getDelivery(ctx: InfraCtx, appUid: string, eventId: string, db: DbOrTx = ctx.db): Promise<DeliveryView | null> {
  const row = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .selectAll('d')
    .select('e.event_time')
    .where('d.app_uid', '=', appUid)
    .where('d.event_id', '=', eventId)
    .executeTakeFirst();
  return row ? deliveryView(row) : null;
}

/** The attempt log, newest first: of one event, or of the whole App. */
export async function listAttempts(ctx: InfraCtx, appUid: string, opts: { eventId?: string; limit?: number } = {}): Promise<AttemptView[]> {
  const limit = clampLimit(opts.limit);
  if (opts.eventId) {
    // One event's attempts are few: read them by event alone and sort and check the App here. With the
    // App in the query (or `ORDER BY id LIMIT`), a planner may pick the App's index and walk its whole
    // attempt log looking for this event (seen: 2.8 s at a million attempts).
    const rows = await ctx.db.selectFrom('webhook_attempts').selectAll().where('event_id', '=', opts.eventId).execute();
    return rows
      .filter((r) => r.app_uid === appUid)
      .sort((a, b) => b.id - a.id)
      .slice(0, limit)
      .map(attemptView);
  }
  const rows = await ctx.db.selectFrom('webhook_attempts').selectAll().where('app_uid', '=', appUid).orderBy('id', 'desc').limit(limit).execute();
  return rows.map(attemptView);
}

function clampLimit(n: number | undefined): number {
  return Math.min(Math.max(Math.trunc(n ?? 100), 1), 1000);
}

/**
 * Sends an event again now, whatever its state (delivered, expired, disabled-then-enabled, or never
 * queued because it predates the webhook). If that attempt fails it is retried as usual until the
 * later of its 72-hour deadline and one hour from now. The hourly cap still holds: the dispatcher will
 * not start an 11th attempt within an hour, however often this is called.
 */
export async function redeliver(ctx: InfraCtx, appUid: string, eventId: string, now = Date.now()): Promise<DeliveryView> {
  const queued = await ctx.db.transaction().execute(async (tx) => {
    const ev = await tx.selectFrom('events').select(['id', 'type', 'created_at_ms']).where('id', '=', eventId).where('app_uid', '=', appUid).executeTakeFirst();
    if (!ev) throw ApiError.notFound('Event');
    const ep = await getEndpoint(tx, appUid);
    if (!ep) throw ApiError.of('webhook_not_configured');
    if (!ep.enabled) throw ApiError.of('webhook_disabled', `The webhook is disabled (${ep.disabled_reason ?? 'by the operator'}); set it again to enable it.`);
    const deadline = Math.max(deadlineFor(ev.created_at_ms), now + REDELIVERY_WINDOW_MS);
    const existing = await tx.selectFrom('webhook_deliveries').select(['deadline_at']).where('event_id', '=', eventId).executeTakeFirst();
    if (existing) {
      await tx
        .updateTable('webhook_deliveries')
        .set({ status: 'pending', next_attempt_at: now, deadline_at: Math.max(existing.deadline_at, deadline), updated_at_ms: now })
        .where('event_id', '=', eventId)
        .execute();
    } else {
      await tx
        .insertInto('webhook_deliveries')
        .values({
          event_id: eventId,
          app_uid: appUid,
          event_type: ev.type,
          status: 'pending',
          event_time_ms: ev.created_at_ms,
          deadline_at: deadline,
          next_attempt_at: now,
          ...NOT_ATTEMPTED,
          created_at_ms: now,
          updated_at_ms: now,
        })
        .execute();
    }
    // As written here: read after the commit, a service that noticed the write (SQLite's change feed,
    // PostgreSQL's wake-up) may already have delivered it, and the caller would be told `delivered`.
    return (await getDelivery(ctx, appUid, eventId, tx))!;
  });
  ctx.queue.notify(WEBHOOK_SIGNAL);
  return queued;
}
