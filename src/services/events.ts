// Events are written in the same transaction as the state change that causes them; the webhook
// dispatcher delivers them later (at least once, with this stable id).
import type { DbOrTx } from '../store/db.js';
import { newEventId } from '../util/ids.js';
import { nowIso } from '../util/time.js';
import { enqueueDelivery } from '../webhooks/deliveries.js';

export type EventType =
  | 'user.wallet_created'
  | 'asset.minted'
  | 'asset.mint_failed'
  | 'asset.edited'
  | 'asset.transferred'
  | 'asset.burned'
  | 'reward.allocated'
  | 'reward.claimed'
  | 'reward.withdrawn';

export async function emitEvent(tx: DbOrTx, appUid: string, type: EventType, data: Record<string, unknown>): Promise<string> {
  const id = newEventId();
  const createdAtMs = Date.now();
  await tx
    .insertInto('events')
    .values({ id, app_uid: appUid, type, payload: JSON.stringify(data), event_time: nowIso(), created_at_ms: createdAtMs })
    .execute();
  await enqueueDelivery(tx, { eventId: id, appUid, type, eventTimeMs: createdAtMs }); // same transaction: never lost
  return id;
}
