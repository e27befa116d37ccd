// Claiming due deliveries: a lease on up to `free` of them, at most an App's cap each (Apps at their
// cap are left out of the query itself, so their backlog cannot fill the candidates and hide other
// Apps' events), and what every attempt of the batch needs, read once.
import type { Db, Tx } from '../store/db.js';
import { skipLocked } from '../store/locks.js';
import type { EndpointRow } from './endpoints.js';
import type { AppEnvironment } from '../domain/environment.js';
import type { DeliveryRow } from './deliveries.js';

export type EventRow = { id: string; type: string; app_uid: string; event_time: string; payload: string };
/** An endpoint with its App's environment (the outbound rules depend on it: local-delivery.ts). */
export type BatchEndpoint = EndpointRow & { app_environment: AppEnvironment };
export type Batch = { events: Map<string, EventRow>; endpoints: Map<string, BatchEndpoint> };

export interface ClaimPlan {
  now: number;
  /** Apps at their cap (or whose endpoint rests): none of theirs is a candidate. */
  full: string[];
  free: number;
  /** Deliveries each App has in flight or waiting in this process. */
  held: Map<string, number>;
  capOf: (app: string) => number;
  leaseMs: number;
  token: string;
}

/** Leases due deliveries; `more`: candidates were cut short by Apps at their cap (claim again at once). */
export async function leaseDue(tx: Tx, plan: ClaimPlan): Promise<{ rows: DeliveryRow[]; more: boolean }> {
  const t = plan.now;
  let q = tx
    .selectFrom('webhook_deliveries')
    .select(['event_id', 'app_uid'])
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', t)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', t)]));
  if (plan.full.length) q = q.where('app_uid', 'not in', plan.full);
  const limit = Math.max(plan.free * 4, 64);
  const candidates = await skipLocked(q.orderBy('next_attempt_at').limit(limit)).execute();
  const counts = new Map(plan.held);
  const chosen: string[] = [];
  let skipped = false;
  for (const c of candidates) {
    if (chosen.length >= plan.free) break;
    const n = counts.get(c.app_uid) ?? 0;
    if (n >= plan.capOf(c.app_uid)) {
      skipped = true;
      continue;
    }
    counts.set(c.app_uid, n + 1);
    chosen.push(c.event_id);
  }
  const more = skipped && chosen.length < plan.free && candidates.length === limit;
  if (chosen.length === 0) return { rows: [], more };
  const rows = await tx
    .updateTable('webhook_deliveries')
    .set({ lease_until: t + plan.leaseMs, locked_by: plan.token })
    .where('event_id', 'in', chosen)
    .returningAll()
    .execute();
  return { rows, more };
}

/** The events of a batch and the endpoint configurations as they are now (each attempt uses the one current when it starts). */
export async function loadBatch(db: Db, rows: DeliveryRow[]): Promise<Batch> {
  const [events, endpoints] = await Promise.all([
    db
      .selectFrom('events')
      .select(['id', 'type', 'app_uid', 'event_time', 'payload'])
      .where(
        'id',
        'in',
        rows.map((r) => r.event_id),
      )
      .execute(),
    db
      .selectFrom('webhook_endpoints')
      .innerJoin('apps', 'apps.uid', 'webhook_endpoints.app_uid')
      .selectAll('webhook_endpoints')
      .select('apps.environment as app_environment')
      .where('webhook_endpoints.app_uid', 'in', [...new Set(rows.map((r) => r.app_uid))])
      .execute(),
  ]);
  return { events: new Map(events.map((e) => [e.id, e])), endpoints: new Map(endpoints.map((e) => [e.app_uid, e])) };
}
