// The worker loop: one poller per job kind, woken at once by local enqueues and otherwise polling.
// Handlers take a batch so that e.g. many mints can share one chain transaction.
import type { Logger } from 'pino';
import type { Job, JobQueue } from './queue.js';
import type { ChainJobKind, JobKind } from './kinds.js';
import { isDatabaseUnavailable } from '../store/unavailable.js';

/** The handler of one job kind: it receives that kind's jobs, with their payloads typed by the kind. */
/** A handler for every kind of chain work: a kind added without one does not compile. */
export type ChainJobHandlers = { [K in ChainJobKind]: JobHandler<K> };

export interface JobHandler<K extends JobKind = JobKind> {
  kind: K;
  batchSize: number;
  leaseMs: number;
  pollMs: number;
  /** After a wake-up, wait this long for more jobs to arrive so they share one batch (default 0). */
  lingerMs?: number;
  /**
   * Awaited before each claim (the mints let a burst of creates go first). A number it resolves to is
   * the most jobs claimed this time instead of `batchSize`.
   */
  beforeClaim?(): Promise<number | void>;
  /** Handles the claimed jobs; must complete, defer or throw for each. Thrown errors fail the whole batch. */
  handle(jobs: Job<K>[]): Promise<void>;
  /** Called once a job has failed for the last time. */
  onDead?(job: Job<K>, error: string): Promise<void>;
}

const OUTAGE_RETRY_MS = 5000;
/** A loop that could not reach the database tries again after this (growing to the most below). */
const DATABASE_RETRY_MS = 250;
const DATABASE_RETRY_MAX_MS = 2000;

export class WorkerPool {
  private running = false;
  private loops: Promise<void>[] = [];
  private wakers = new Map<string, () => void>();
  private dirty = new Set<string>(); // a signal arrived while the loop was busy

  constructor(
    private readonly queue: JobQueue,
    private readonly log: Logger,
    private readonly workerId: string,
    /** Errors that are an outage, not a failure of the job: it waits and runs again, attempt not spent. */
    private readonly isOutage: (err: unknown) => boolean = () => false,
  ) {}

  /**
   * Runs a loop per handler. `kindOf` gives the kind claimed for a handler's kind: a chain's own kind
   * where the pool runs one chain's work.
   */
  start(handlers: JobHandler[], kindOf: (kind: JobKind) => string = (kind) => kind): void {
    this.running = true;
    for (const h of handlers) this.loops.push(this.loop(h, kindOf(h.kind)));
  }

  async stop(): Promise<void> {
    this.running = false;
    for (const w of [...this.wakers.values()]) w();
    await Promise.all(this.loops);
  }

  private async loop(h: JobHandler, kind: string): Promise<void> {
    const onSignal = () => {
      const wake = this.wakers.get(kind);
      if (wake) wake();
      else this.dirty.add(kind);
    };
    this.queue.signals.on(kind, onSignal);
    try {
      // A full claim means more jobs are waiting: the next claim follows at once. The linger is for a
      // wake-up, when the first jobs of a burst may have company a few ms later.
      let backlog = false;
      let dbPause = 0;
      while (this.running) {
        let claimed: Job[] = [];
        let limit = h.batchSize;
        if (h.lingerMs && !backlog) await new Promise((r) => setTimeout(r, h.lingerMs));
        try {
          limit = Math.min(h.batchSize, (await h.beforeClaim?.()) || h.batchSize);
          claimed = await this.queue.claim(kind, limit, this.workerId, h.leaseMs);
          if (claimed.length > 0) await this.runBatch(h, kind, claimed);
          dbPause = 0;
        } catch (err) {
          if (!isDatabaseUnavailable(err)) this.log.error({ err, kind }, 'job loop error');
          else {
            // The jobs resume by themselves once it is back: claimed ones when their lease lapses.
            if (dbPause === 0) this.log.warn({ kind, err: (err as Error).message }, 'database unavailable: the job loop retries');
            dbPause = Math.min(dbPause ? dbPause * 2 : DATABASE_RETRY_MS, DATABASE_RETRY_MAX_MS);
            await this.sleep(kind, dbPause);
            continue;
          }
        }
        backlog = claimed.length > 0 && claimed.length >= limit;
        if (!backlog) await this.sleep(kind, h.pollMs);
      }
    } finally {
      this.queue.signals.off(kind, onSignal);
    }
  }

  private async runBatch(h: JobHandler, kind: string, jobs: Job[]): Promise<void> {
    try {
      await h.handle(jobs);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      // Not the job's failure: it runs again, attempt given back. While the database is away the
      // defer fails too: the loop then waits for it, and the leases lapse.
      if (isDatabaseUnavailable(err)) {
        for (const j of jobs) await this.queue.defer(this.queue.db, j, 0);
        return;
      }
      if (this.isOutage(err)) {
        this.log.warn({ kind, jobs: jobs.length, err: message }, `outage: jobs wait ${OUTAGE_RETRY_MS / 1000} s (attempts not spent)`);
        for (const j of jobs) await this.queue.defer(this.queue.db, j, OUTAGE_RETRY_MS);
        return;
      }
      this.log.warn({ kind, jobs: jobs.map((j) => j.id), err: message }, 'job failed, will retry');
      for (const j of jobs) {
        const final = await this.queue.fail(j, message);
        if (final) {
          this.log.error({ kind, job: j.id, ref: j.ref, err: message }, 'job failed for good');
          await h.onDead?.(j, message);
        }
      }
    }
  }

  private sleep(kind: string, ms: number): Promise<void> {
    if (this.dirty.delete(kind) || !this.running) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakers.delete(kind);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.set(kind, done);
    });
  }
}
