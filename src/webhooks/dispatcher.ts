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
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { InfraCtx } from '../config/infra-context.js';
import { workersInOneProcess } from '../store/locks.js';
import { httpSender, type WebhookSender } from './sender.js';
import { isDatabaseUnavailable } from '../store/unavailable.js';
import { WEBHOOK_SIGNAL } from './endpoints.js';
import { EndpointBreakers } from './breaker.js';
import { leaseDue, loadBatch, type Batch, type BatchEndpoint, type EventRow } from './claim.js';
import { DeliveryResults, type Claimed } from './results.js';
import { attemptDelivery, type AttemptDeps } from './attempt.js';
/** A claimed delivery waiting for a free slot (its App below its cap, the process below its total). */
type Ready = { row: Claimed; batch: Batch; claimedAt: number };

/**
 * Claimed deliveries wait at most this long for a slot before their lease is given back: the events
 * and endpoint configuration read with the claim are then at most this old when the attempt starts.
 */
const READY_MAX_AGE_MS = 1000;

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
  private readonly results: DeliveryResults;

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
    this.results = new DeliveryResults(ctx, this.log, this.now);
  }

  /** What an attempt uses of this dispatcher (its stop signal read when the attempt starts). */
  private get attempts(): AttemptDeps {
    const { ctx, log, now, random, sender, timeoutMs, breakers, results } = this;
    return { ctx, log, now, random, sender, timeoutMs, stopping: this.stopping.signal, breakers, results };
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
    await Promise.all(left.map((r) => this.results.settle(r.row, {}))).catch((err) => this.log.warn({ err }, 'could not release claimed webhook deliveries'));
    await this.results.drain(); // every result and release before it written
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
        void this.results.settle(r.row, {}).catch((err) => this.log.warn({ err, event: r.row.event_id }, 'could not release a webhook delivery'));
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
    const { result, durable } = await this.results.commit((tx) => leaseDue(tx, { now: t, full, free, held, capOf, leaseMs: this.leaseMs, token }));
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

  private deliver(row: Claimed, ev: EventRow | undefined, ep: BatchEndpoint | undefined, release: () => void): Promise<void> {
    return attemptDelivery(this.attempts, row, ev, ep, release);
  }
}
