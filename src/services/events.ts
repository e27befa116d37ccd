// Events are written in the same transaction as the state change that causes them; the webhook
// dispatcher delivers them later (at least once, with this stable id).
import type { DbOrTx } from '../store/db.js';
import { insertRowsTogether } from '../store/inserts.js';
import type { EventType } from '../domain/events.js';
import { newEventId } from '../util/ids.js';
import { nowIso } from '../util/time.js';
import { deliveryRows } from '../webhooks/deliveries.js';
import { stringifyExact } from '../domain/exact-json.js';

export type { EventType };

export async function emitEvent(tx: DbOrTx, appUid: string, type: EventType, data: Record<string, unknown>): Promise<string> {
  const [id] = await emitEvents(tx, appUid, type, [data]);
  return id;
}

/** Many events of one App and type with one insert per table (a minted batch emits one per asset). */
export async function emitEvents(tx: DbOrTx, appUid: string, type: EventType, data: Record<string, unknown>[]): Promise<string[]> {
  if (data.length === 0) return [];
  const createdAtMs = Date.now();
  const eventTime = nowIso();
  const rows = data.map((d) => ({ id: newEventId(), app_uid: appUid, type, payload: stringifyExact(d), event_time: eventTime, created_at_ms: createdAtMs }));
  const ids = rows.map((r) => r.id);
  // Their deliveries in the same transaction (never lost), and on PostgreSQL in the same statement,
  // sent with the transaction's next one (its COMMIT at the latest).
  await insertRowsTogether(
    tx,
    [
      { table: 'events', rows },
      { table: 'webhook_deliveries', rows: await deliveryRows(tx, appUid, type, createdAtMs, ids) },
    ],
    { held: true },
  );
  return ids;
}
