// The webhook dispatcher: claims due deliveries from the database with a lease, sends them, and records
// each attempt with the delivery's next state in one transaction.
//
// - Durable and multi-process: all state is in `webhook_deliveries`; a claim takes a lease (PostgreSQL
//   FOR UPDATE SKIP LOCKED, so workers never block each other), and a crashed worker's deliveries are
//   claimed again when the lease runs out (delivery is at least once; receivers dedupe on event_id).
// - Isolation: at most `concurrency` requests in flight per process, at most `perEndpoint` for one App's
//   endpoint. An App at its cap is left out of the claim query, so a hanging endpoint holds at most
//   `perEndpoint` slots and its queue never stands in front of other Apps' events.
// - An endpoint that keeps failing is given a rest (breaker.ts): its deliveries wait, unattempted,
//   instead of taking the dispatcher's capacity one failure at a time.
// - Every attempt uses the App's configuration as read with its claim, at most a second before it starts.
// - Throughput: claims run ahead of the free slots and load a batch's events and endpoints in two
//   queries; connections are kept alive; results are group-committed, each guarded by its lease token.
//   On SQLite a claim is flushed (thread pool) before anything is sent; results are not waited for.
// - The clock and the HTTP sender are injected, so tests can run 73 hours of retries in a moment.
import { redactUrl } from '../net/redact-url.js';
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { InfraCtx } from '../util/infra-context.js';
import { commitOf, type Tx } from '../store/db.js';
import { workersInOneProcess } from '../store/locks.js';
import { clean, describeError, httpSender, RESPONSE_LOG_BYTES, type WebhookSender, type WebhookSendResult } from './sender.js';
import { OutboundBlockedError } from '../net/outbound.js';
import { isDatabaseUnavailable } from '../store/unavailable.js';
import { buildRequest, isoOfMs } from './message.js';
import { holdPending, signingSecrets, WEBHOOK_SIGNAL } from './endpoints.js';
import { blockedAdvice, placeOf, webhookPolicy } from './local-delivery.js';
import type { DeliveryRow } from './deliveries.js';
import { nextAttempt, parseRetryAfter, pushRecent, windowFloor } from './schedule.js';
import { EndpointBreakers } from './breaker.js';
import { leaseDue, loadBatch, type Batch, type BatchEndpoint, type EventRow } from './claim.js';

type Claimed = DeliveryRow & { token: string };
/** A claimed delivery waiting for a free slot (its App below its cap, the process below its total). */
type Ready = { row: Claimed; batch: Batch; claimedAt: number };

/**
 * Claimed deliveries wait at most this long for a slot before their lease is given back: the events
 * and endpoint configuration read with the claim are then at most this old when the attempt starts.
 */
const READY_MAX_AGE_MS = 1000;
type Write = (tx: Tx) => Promise<void>;

export interface DispatcherOptions {
  workerId?: string;
  now?: () => number;
  sender?: WebhookSender;
  /** Requests in flight in this process, all Apps together. */
  concurrency?: number;
  /** Requests in flight to one App's endpoint. */
  perEndpoint?: number;
  pollMs?: number;
  leaseMs?: number;
  timeoutMs?: number;
  random?: () => number;
  log?: Logger;
}

export class WebhookDispatcher {
  readonly now: () => number;
  private readonly sender: WebhookSender;
  private readonly concurrency: number;
  private readonly perEndpoint: number;
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly timeoutMs: number;
  private readonly random: () => number;
  private readonly workerId: string;
  private readonly log: Logger;

  private readonly inflight = new Map<string, number>(); // app_uid -> requests in flight
  private total = 0;
  // Claimed ahead of the free slots, so that a finished request is followed at once by the next one
  // instead of a claim round trip per delivery.
  private ready: Ready[] = [];
  private readonly buffered = new Map<string, number>(); // app_uid -> deliveries in `ready`
  private readonly breakers = new EndpointBreakers();
  private readonly tasks = new Set<Promise<void>>();
  private running = false;
  private loopDone: Promise<void> | null = null;
  private waker: (() => void) | null = null;
  private dirty = false;
  private stopping = new AbortController();
  private readonly onSignal = () => this.wake();

  constructor(
    private readonly ctx: InfraCtx,
    opts: DispatcherOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.sender = opts.sender ?? httpSender({ allowPrivate: ctx.config.outboundAllowPrivate });
    this.concurrency = opts.concurrency ?? 32;
    this.perEndpoint = opts.perEndpoint ?? 4;
    this.pollMs = opts.pollMs ?? 250;
    this.leaseMs = opts.leaseMs ?? 60_000;
    this.timeoutMs = opts.timeoutMs ?? 15_000;
    this.random = opts.random ?? Math.random;
    this.workerId = opts.workerId ?? `webhooks:${process.pid}`;
    this.log = opts.log ?? ctx.log.child({ component: 'webhooks' });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopping = new AbortController();
    setMaxListeners(this.concurrency * 2 + 10, this.stopping.signal); // one listener per request in flight
    this.ctx.queue.signals.on(WEBHOOK_SIGNAL, this.onSignal);
    this.loopDone = this.loop();
  }

  /** Stops claiming, aborts requests in flight (their deliveries are released, to be sent again). */
  async stop(): Promise<void> {
    this.running = false;
    this.ctx.queue.signals.off(WEBHOOK_SIGNAL, this.onSignal);
    this.stopping.abort(new Error('dispatcher stopping'));
    this.wake();
    await this.loopDone;
    await Promise.allSettled([...this.tasks]);
    // Deliveries claimed but not started: their leases are given back, so they go at the next start
    // (or to another process) without waiting for the leases to run out.
    const left = this.ready.splice(0);
    this.buffered.clear();
    await Promise.all(left.map((r) => this.settle(r.row, {}))).catch((err) => this.log.warn({ err }, 'could not release claimed webhook deliveries'));
    await this.record(async () => {}); // queued last: every result and release before it is written
    await Promise.all([...this.flushes]);
  }

  /** One claim round, waiting for its deliveries to finish (for tests and benchmarks). */
  async runOnce(): Promise<number> {
    const { rows, batch } = await this.claim(this.concurrency - this.total, this.perEndpoint);
    await Promise.all(rows.map((r) => this.launch(r, batch)));
    return rows.length;
  }

  /** Requests in flight (all Apps). */
  get busy(): number {
    return this.total;
  }

  private async loop(): Promise<void> {
    if (workersInOneProcess(this.ctx.dialect)) {
      // Any lease left belongs to a previous run of this process.
      await this.ctx.db
        .updateTable('webhook_deliveries')
        .set({ lease_until: null, locked_by: null })
        .where('status', '=', 'pending')
        .where('lease_until', 'is not', null)
        .execute()
        .catch((err) => this.log.error({ err }, 'cannot clear stale webhook leases'));
    }
    while (this.running) {
      let more = false;
      try {
        // Refill when less than one round of requests is waiting: up to twice the slots, at most
        // four times the per-endpoint cap per App (counting its requests in flight).
        const startable = this.startable();
        if (startable < this.concurrency) {
          const claimed = await this.claim(this.concurrency * 2 - this.total - startable, this.perEndpoint * 4);
          const claimedAt = this.now();
          for (const row of claimed.rows) {
            this.ready.push({ row, batch: claimed.batch, claimedAt });
            this.buffered.set(row.app_uid, (this.buffered.get(row.app_uid) ?? 0) + 1);
          }
          more = claimed.more;
        }
        this.pump();
      } catch (err) {
        // The database away: the next poll claims again once it is back.
        if (isDatabaseUnavailable(err)) this.log.warn({ err: (err as Error).message }, 'webhook claim failed: database unavailable');
        else this.log.error({ err }, 'webhook claim failed');
      }
      // Claim again at once only when the candidates were cut short by Apps at their cap (excluded
      // next time); otherwise nothing else is due until a slot frees, a signal or the next poll.
      if (!more) await this.sleep();
    }
  }

  /** Starts waiting deliveries while slots are free; gives back those that waited too long. */
  private pump(): void {
    if (!this.running) return; // stop() gives the waiting ones back
    const t = this.now();
    const kept: Ready[] = [];
    for (const r of this.ready) {
      const app = r.row.app_uid;
      if (t - r.claimedAt > READY_MAX_AGE_MS) {
        this.unbuffer(app);
        void this.settle(r.row, {}).catch((err) => this.log.warn({ err, event: r.row.event_id }, 'could not release a webhook delivery'));
      } else if (this.total < this.concurrency && (this.inflight.get(app) ?? 0) < this.breakers.allowance(app, t, this.perEndpoint)) {
        this.unbuffer(app);
        void this.launch(r.row, r.batch);
      } else kept.push(r);
    }
    this.ready = kept;
  }

  /**
   * Waiting deliveries whose App is below its cap: those an App at its cap holds (a hanging endpoint)
   * must not stop the claims that would bring other Apps' events.
   */
  private startable(): number {
    let n = 0;
    const t = this.now();
    for (const r of this.ready) if ((this.inflight.get(r.row.app_uid) ?? 0) < this.breakers.allowance(r.row.app_uid, t, this.perEndpoint)) n++;
    return n;
  }

  private unbuffer(app: string): void {
    const n = (this.buffered.get(app) ?? 1) - 1;
    if (n <= 0) this.buffered.delete(app);
    else this.buffered.set(app, n);
  }

  private wake(): void {
    if (this.waker) this.waker();
    else this.dirty = true;
  }

  private sleep(): Promise<void> {
    if (this.dirty || !this.running) {
      this.dirty = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waker = null;
        resolve();
      };
      const timer = setTimeout(done, this.pollMs);
      this.waker = done;
    });
  }

  /**
   * Claims up to `free` due deliveries, at most `perApp` per App counting those in flight and waiting.
   * Apps already at that cap are excluded in the query itself, so their backlog cannot fill the
   * candidate list and hide other Apps' events.
   */
  private async claim(free: number, perApp: number): Promise<{ rows: Claimed[]; batch: Batch; more: boolean }> {
    let more = false;
    const empty = () => ({ rows: [], batch: { events: new Map(), endpoints: new Map() }, more });
    if (free <= 0) return empty();
    const t = this.now();
    const held = new Map(this.inflight);
    for (const [app, n] of this.buffered) held.set(app, (held.get(app) ?? 0) + n);
    // Apps at their cap, and those whose endpoint's breaker is open (or probing with one request).
    const capOf = (app: string) => {
      const allowed = this.breakers.allowance(app, t, this.perEndpoint);
      return allowed < this.perEndpoint ? allowed : perApp;
    };
    const full = [...new Set([...held.keys(), ...this.breakers.tripped()])].filter((app) => (held.get(app) ?? 0) >= capOf(app));
    const token = `${this.workerId}:${randomUUID()}`;
    const { result, durable } = await this.commit((tx) => leaseDue(tx, { now: t, full, free, held, capOf, leaseMs: this.leaseMs, token }));
    const rows = result.rows;
    more = result.more;
    if (rows.length === 0) return empty();
    // Nothing is sent about an event a power cut could still take back: the flush that makes this
    // claim durable also flushes every event committed before it.
    await durable;
    const batch = await loadBatch(this.ctx.db, rows);
    return { rows: rows.map((r) => ({ ...r, token })), batch, more };
  }

  private launch(row: Claimed, batch: Batch): Promise<void> {
    this.total++;
    this.inflight.set(row.app_uid, (this.inflight.get(row.app_uid) ?? 0) + 1);
    let released = false;
    // The slot is given back as soon as the request is over (the row stays leased until its result is
    // written), so the next request to the endpoint does not wait for the database.
    const release = () => {
      if (released) return;
      released = true;
      this.total--;
      const n = (this.inflight.get(row.app_uid) ?? 1) - 1;
      if (n <= 0) this.inflight.delete(row.app_uid);
      else this.inflight.set(row.app_uid, n);
      this.pump(); // a slot is free: the next waiting delivery takes it
      if (this.startable() < this.concurrency) this.wake(); // time to claim more
    };
    const task = this.deliver(row, batch.events.get(row.event_id), batch.endpoints.get(row.app_uid), release)
      .catch((err) => this.log.error({ err, event: row.event_id }, 'webhook delivery failed unexpectedly'))
      .finally(() => {
        release();
        this.tasks.delete(task);
      });
    this.tasks.add(task);
    return task;
  }

  /** Updates the claimed row, if this claim still holds it. */
  private settle(row: Claimed, set: Partial<DeliveryRow>): Promise<void> {
    return this.record((tx) => this.update(tx, row, set).then(() => undefined));
  }

  private update(tx: Tx, row: Claimed, set: Partial<DeliveryRow>) {
    return tx
      .updateTable('webhook_deliveries')
      .set({ updated_at_ms: this.now(), ...set, lease_until: null, locked_by: null })
      .where('event_id', '=', row.event_id)
      .where('locked_by', '=', row.token)
      .execute();
  }

  /** A write transaction whose flush to disk is not waited for on the event loop (SQLite). */
  private commit<T>(fn: (tx: Tx) => Promise<T>): Promise<{ result: T; durable: Promise<void> }> {
    return commitOf(this.ctx)(fn);
  }

  // Group commit: writes submitted while a transaction is running go together into the next one.
  private pending: { write: Write; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private flushing = false;
  private readonly flushes = new Set<Promise<void>>(); // results being flushed to disk: a stop waits for them

  private record(write: Write): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ write, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.pending.length) {
        const batch = this.pending.splice(0, 200);
        try {
          // Not waited for durability: a result lost to a power cut means one more attempt, which
          // at-least-once delivery allows (receivers dedupe on event_id).
          const { durable } = await this.commit(async (tx) => {
            for (const w of batch) await w.write(tx);
          });
          const flushed = durable.catch((err) => this.log.warn({ err }, 'webhook results not flushed to disk'));
          this.flushes.add(flushed);
          void flushed.finally(() => this.flushes.delete(flushed));
          for (const w of batch) w.resolve();
        } catch {
          // One bad write must not lose the others: write them one by one.
          for (const w of batch) {
            await this.ctx.db
              .transaction()
              .execute((tx) => w.write(tx))
              .then(w.resolve, w.reject);
          }
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private async deliver(row: Claimed, ev: EventRow | undefined, ep: BatchEndpoint | undefined, release: () => void): Promise<void> {
    const { ctx } = this;
    const t0 = this.now();
    const recent = JSON.parse(row.recent_attempts) as number[];
    if (t0 >= row.deadline_at) return this.settle(row, { status: 'expired', next_attempt_at: null });
    // The hourly cap, for what is not a scheduled retry (manual redelivery, a URL change).
    const floor = windowFloor(recent);
    if (floor > t0) return this.settle(row, { next_attempt_at: Math.min(floor, row.deadline_at) });

    if (!ev) return this.settle(row, { status: 'expired', next_attempt_at: null, last_error: 'the event no longer exists' });
    if (!ep) return this.settle(row, { status: 'disabled', next_attempt_at: null, last_error: 'no webhook configured' });
    if (!ep.enabled) return this.settle(row, { status: 'disabled', next_attempt_at: null, last_error: ep.disabled_reason ?? 'webhook disabled' });

    const attempt = row.attempts + 1;
    const { body, headers } = buildRequest(
      { id: ev.id, type: ev.type, appUid: ev.app_uid, eventTime: ev.event_time, payload: ev.payload },
      attempt,
      t0,
      signingSecrets(ctx.box, ep, t0),
    );
    const started = performance.now();
    let res: WebhookSendResult | null = null;
    let error: string | null = null;
    try {
      const { allowLoopback } = webhookPolicy(placeOf(ctx), ep.app_environment);
      res = await this.sender({ url: ep.url, headers, body, timeoutMs: this.timeoutMs, signal: this.stopping.signal, allowLoopback });
    } catch (err) {
      if (this.stopping.signal.aborted) return this.settle(row, {}); // shutting down: not an attempt, send again later
      error = describeError(err);
      // Only the delivery log would say so otherwise: an endpoint on a private address is a setup
      // mistake (or an attempt) the operator must hear of. The log (and the console) say what to do.
      if (err instanceof OutboundBlockedError) {
        const advice = blockedAdvice(placeOf(ctx), ep.app_environment, err.reason);
        error = `${error}: ${advice}`;
        this.log.warn({ app: row.app_uid, url: redactUrl(ep.url), event: ev.id, reason: err.reason, advice }, 'webhook delivery refused by the outbound guard');
      }
    }
    const latency = Math.round(performance.now() - started);
    release();
    const t1 = Math.max(this.now(), t0);
    const ok = res !== null && res.status >= 200 && res.status < 300;
    this.breakers.record(row.app_uid, ok, t1);
    if (res && !ok) error = res.status >= 300 && res.status < 400 ? `HTTP ${res.status} (redirects are not followed)` : `HTTP ${res.status}`;
    const nextRecent = pushRecent(recent, t0);
    const common = {
      attempts: attempt,
      last_attempt_at: t0,
      last_status_code: res?.status ?? null,
      last_error: error,
      recent_attempts: JSON.stringify(nextRecent),
    };

    await this.record(async (tx) => {
      await tx
        .insertInto('webhook_attempts')
        .values({
          event_id: row.event_id,
          app_uid: row.app_uid,
          attempt,
          attempted_at: t0,
          url: ep.url,
          status_code: res?.status ?? null,
          latency_ms: latency,
          error: clean(error),
          response_body: res ? clean(res.body.slice(0, RESPONSE_LOG_BYTES)) : null,
        })
        .execute();
      const settle = (set: Partial<DeliveryRow>) => this.update(tx, row, { ...common, ...set, updated_at_ms: t1 });
      if (ok) return void (await settle({ status: 'delivered', delivered_at: t1, next_attempt_at: null }));
      if (res?.status === 410) {
        // 410 Gone: the receiver asks us to stop. Disable the endpoint, unless it was reconfigured
        // while this attempt was on its way (then the 410 was about a URL no longer in use).
        const r = await tx
          .updateTable('webhook_endpoints')
          .set({ enabled: 0, disabled_reason: `${ep.url} answered 410 Gone at ${isoOfMs(t1)}`, version: ep.version + 1, updated_at: isoOfMs(t1) })
          .where('app_uid', '=', row.app_uid)
          .where('version', '=', ep.version)
          .executeTakeFirst();
        if (Number(r.numUpdatedRows) > 0) {
          this.log.warn({ app: row.app_uid, url: redactUrl(ep.url) }, 'webhook endpoint answered 410 Gone: disabled');
          await holdPending(tx, row.app_uid, t1);
          return void (await settle({ status: 'disabled', next_attempt_at: null, last_error: 'HTTP 410 Gone: webhook disabled' }));
        }
      }
      const next = nextAttempt({
        attemptsMade: attempt,
        failedAt: t1,
        retryAfterMs: parseRetryAfter(res?.headers['retry-after'], t1),
        recentStarts: nextRecent,
        deadline: row.deadline_at,
        random: this.random,
      });
      await settle({ status: 'pending', next_attempt_at: next.at });
    });
  }
}
