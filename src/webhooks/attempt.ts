// One attempt of one webhook delivery: checked against its deadline, the hourly cap and the App's
// endpoint as read with the claim; signed and sent; its result recorded with the delivery's next state
// (delivered, retried later, or disabled by a 410 Gone) in one transaction.
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { InfraCtx } from '../config/infra-context.js';
import type { Tx } from '../store/db.js';
import { redactUrl } from '../net/redact-url.js';
import { OutboundBlockedError } from '../net/outbound.js';
import { clean, describeError, RESPONSE_LOG_BYTES, type WebhookSender, type WebhookSendResult } from './sender.js';
import { buildRequest, isoOfMs } from './message.js';
import { holdPending, signingSecrets } from './endpoints.js';
import { blockedAdvice, placeOf, webhookPolicy } from './local-delivery.js';
import type { DeliveryRow } from './deliveries.js';
import { nextAttempt, parseRetryAfter, pushRecent, windowFloor } from './schedule.js';
import type { EndpointBreakers } from './breaker.js';
import type { BatchEndpoint, EventRow } from './claim.js';
import type { Claimed, DeliveryResults } from './results.js';

/** What an attempt uses of its dispatcher. */
export interface AttemptDeps {
  ctx: InfraCtx;
  log: Logger;
  now: () => number;
  random: () => number;
  sender: WebhookSender;
  timeoutMs: number;
  /** Aborted when the dispatcher stops: the request is cut short and is not an attempt. */
  stopping: AbortSignal;
  breakers: EndpointBreakers;
  results: DeliveryResults;
}

/** What was sent and how it went. */
interface Outcome {
  attempt: number;
  t0: number;
  t1: number;
  latency: number;
  res: WebhookSendResult | null;
  ok: boolean;
  error: string | null;
  /** The starts of the last hour's attempts, this one's included. */
  recent: number[];
}

/**
 * Attempts `row` once. `release` gives the request's slot back as soon as the request is over (the row
 * stays leased until its result is written), so the next request to the endpoint does not wait for the database.
 */
export async function attemptDelivery(
  d: AttemptDeps,
  row: Claimed,
  ev: EventRow | undefined,
  ep: BatchEndpoint | undefined,
  release: () => void,
): Promise<void> {
  const t0 = d.now();
  const recent = JSON.parse(row.recent_attempts) as number[];
  if (t0 >= row.deadline_at) return d.results.settle(row, { status: 'expired', next_attempt_at: null });
  // The hourly cap, for what is not a scheduled retry (manual redelivery, a URL change).
  const floor = windowFloor(recent);
  if (floor > t0) return d.results.settle(row, { next_attempt_at: Math.min(floor, row.deadline_at) });

  if (!ev) return d.results.settle(row, { status: 'expired', next_attempt_at: null, last_error: 'the event no longer exists' });
  if (!ep) return d.results.settle(row, { status: 'disabled', next_attempt_at: null, last_error: 'no webhook configured' });
  if (!ep.enabled) return d.results.settle(row, { status: 'disabled', next_attempt_at: null, last_error: ep.disabled_reason ?? 'webhook disabled' });

  const attempt = row.attempts + 1;
  const { body, headers } = buildRequest(
    { id: ev.id, type: ev.type, appUid: ev.app_uid, eventTime: ev.event_time, payload: ev.payload },
    attempt,
    t0,
    signingSecrets(d.ctx.box, ep, t0),
  );
  const started = performance.now();
  let res: WebhookSendResult | null = null;
  let error: string | null = null;
  try {
    const { allowLoopback } = webhookPolicy(placeOf(d.ctx), ep.app_environment);
    res = await d.sender({ url: ep.url, headers, body, timeoutMs: d.timeoutMs, signal: d.stopping, allowLoopback });
  } catch (err) {
    if (d.stopping.aborted) return d.results.settle(row, {}); // shutting down: not an attempt, send again later
    error = describeError(err);
    // Only the delivery log would say so otherwise: an endpoint on a private address is a setup
    // mistake (or an attempt) the operator must hear of. The log (and the console) say what to do.
    if (err instanceof OutboundBlockedError) {
      const advice = blockedAdvice(placeOf(d.ctx), ep.app_environment, err.reason);
      error = `${error}: ${advice}`;
      d.log.warn({ app: row.app_uid, url: redactUrl(ep.url), event: ev.id, reason: err.reason, advice }, 'webhook delivery refused by the outbound guard');
    }
  }
  const latency = Math.round(performance.now() - started);
  release();
  const t1 = Math.max(d.now(), t0);
  const ok = res !== null && res.status >= 200 && res.status < 300;
  d.breakers.record(row.app_uid, ok, t1);
  if (res && !ok) error = res.status >= 300 && res.status < 400 ? `HTTP ${res.status} (redirects are not followed)` : `HTTP ${res.status}`;
  const outcome: Outcome = { attempt, t0, t1, latency, res, ok, error, recent: pushRecent(recent, t0) };
  await d.results.record((tx) => recordAttempt(d, tx, row, ep, outcome));
}

/** The attempt in the log, and the delivery's next state. */
async function recordAttempt(d: AttemptDeps, tx: Tx, row: Claimed, ep: BatchEndpoint, o: Outcome): Promise<void> {
  const { attempt, t0, t1, res, ok, error } = o;
  await tx
    .insertInto('webhook_attempts')
    .values({
      event_id: row.event_id,
      app_uid: row.app_uid,
      attempt,
      attempted_at: t0,
      url: ep.url,
      status_code: res?.status ?? null,
      latency_ms: o.latency,
      error: clean(error),
      response_body: res ? clean(res.body.slice(0, RESPONSE_LOG_BYTES)) : null,
    })
    .execute();
  const common = {
    attempts: attempt,
    last_attempt_at: t0,
    last_status_code: res?.status ?? null,
    last_error: error,
    recent_attempts: JSON.stringify(o.recent),
  };
  const settle = (set: Partial<DeliveryRow>) => d.results.update(tx, row, { ...common, ...set, updated_at_ms: t1 });
  if (ok) return void (await settle({ status: 'delivered', delivered_at: t1, next_attempt_at: null }));
  if (res?.status === 410 && (await goneDisables(d, tx, row, ep, t1)))
    return void (await settle({ status: 'disabled', next_attempt_at: null, last_error: 'HTTP 410 Gone: webhook disabled' }));
  const next = nextAttempt({
    attemptsMade: attempt,
    failedAt: t1,
    retryAfterMs: parseRetryAfter(res?.headers['retry-after'], t1),
    recentStarts: o.recent,
    deadline: row.deadline_at,
    random: d.random,
  });
  await settle({ status: 'pending', next_attempt_at: next.at });
}

/**
 * 410 Gone: the receiver asks us to stop. Disables the endpoint, unless it was reconfigured while this
 * attempt was on its way (then the 410 was about a URL no longer in use). True when it was disabled.
 */
async function goneDisables(d: AttemptDeps, tx: Tx, row: Claimed, ep: BatchEndpoint, t1: number): Promise<boolean> {
  const r = await tx
    .updateTable('webhook_endpoints')
    .set({ enabled: 0, disabled_reason: `${ep.url} answered 410 Gone at ${isoOfMs(t1)}`, version: ep.version + 1, updated_at: isoOfMs(t1) })
    .where('app_uid', '=', row.app_uid)
    .where('version', '=', ep.version)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) return false;
  d.log.warn({ app: row.app_uid, url: redactUrl(ep.url) }, 'webhook endpoint answered 410 Gone: disabled');
  await holdPending(tx, row.app_uid, t1);
  return true;
}
