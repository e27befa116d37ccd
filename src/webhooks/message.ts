// The webhook request of one attempt (docs/api.md, Webhooks): body and headers. Pure: the attempt's time and the
// secrets are arguments, so tests can rebuild and verify exactly what was sent.
import { isoFromMicros } from '../util/time.js';
import { signatureHeaders } from '../util/webhook-signing.js';

export interface WebhookEvent {
  id: string;
  type: string;
  appUid: string;
  /** ISO, when the event was registered (events.event_time). */
  eventTime: string;
  /** JSON text of `data`, as stored with the event. */
  payload: string;
}

export const USER_AGENT = 'Mintworks-Webhooks/1';

/** ISO 8601 UTC with microseconds, like every timestamp of the API. */
export const isoOfMs = (ms: number): string => isoFromMicros(BigInt(Math.floor(ms)) * 1000n);

/**
 * The body, keys in the documented order. `data` is the stored JSON spliced in as it is: it was
 * written in the event's transaction (amounts as exact literals), so it is the resource as it was at event time.
 */
export function buildBody(ev: WebhookEvent, attempt: number, sentAtMs: number): string {
  const head = JSON.stringify({ event: ev.type, event_id: ev.id, app_uid: ev.appUid, event_time: ev.eventTime, sent_at: isoOfMs(sentAtMs), attempt });
  return `${head.slice(0, -1)},"data":${ev.payload}}`;
}

/** Body and headers of an attempt, signed with every secret in `secrets` (current first). */
export function buildRequest(
  ev: WebhookEvent,
  attempt: number,
  sentAtMs: number,
  secrets: readonly string[],
): { body: string; headers: Record<string, string> } {
  const body = buildBody(ev, attempt, sentAtMs);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-app-uid': ev.appUid,
    'x-webhook-correlation-id': ev.id,
    'x-webhook-attempt': String(attempt),
    ...signatureHeaders(secrets, ev.id, Math.floor(sentAtMs / 1000), body),
  };
  return { body, headers };
}
