// The console's test of an App's webhook: a `webhook.test` event, sent at once whatever the event
// filter says, and its delivery row as the log shows it.
import type { Ctx } from '../context.js';
import { ApiError } from '../../util/errors.js';
import { newEventId } from '../../util/ids.js';
import { nowIso } from '../../util/time.js';
import { getEndpoint } from '../../webhooks/endpoints.js';
import { redeliver } from '../../webhooks/deliveries.js';
import { deliveryLog } from './queries.js';

export async function sendTestEvent(ctx: Ctx, appUid: string) {
  const ep = await getEndpoint(ctx.db, appUid);
  if (!ep) throw ApiError.of('webhook_not_configured');
  if (!ep.enabled) throw ApiError.of('webhook_disabled', 'The webhook is disabled: turn it on first.');
  const id = newEventId();
  await ctx.db
    .insertInto('events')
    .values({
      id,
      app_uid: appUid,
      type: 'webhook.test',
      payload: JSON.stringify({ message: 'A test event sent from the Mintworks console.' }),
      event_time: nowIso(),
      created_at_ms: Date.now(),
    })
    .execute();
  await redeliver(ctx, appUid, id);
  const log = await deliveryLog(ctx, appUid, { limit: 1, eventId: id });
  return log.items[0];
}
