// Fixed-window request counters shared by every API process through the database, without a database
// round trip on the request path.
//
// Each process counts locally and flushes its increments every `flushMs` (100 ms) in ONE upsert that
// returns each bucket's total across all processes. A request is admitted when
//   total at the last flush + increments not yet reflected in it  <  limit,
// decided synchronously in memory. Within one process the limit is exact. Across processes a bucket can
// exceed its limit by what the OTHER processes admitted since this process last flushed (at most about
// `flushMs` plus one round trip of their traffic): the documented tolerance. A process that starts in
// the middle of a window learns the window's total at its first flush, so restarts do not reset limits.
import type { Logger } from 'pino';
import type { Ctx } from '../context.js';
import { commitOf, type GroupCommit } from '../../store/db.js';

export interface Increment {
  bucket: string;
  window: number;
  n: number;
}
export interface Total {
  bucket: string;
  window: number;
  hits: number;
}

/** Where the counts are shared. `add` applies increments atomically and returns the buckets' totals. */
export interface CounterStore {
  add(increments: Increment[]): Promise<Total[]>;
  /** Drops the counters of windows before `window`. */
  sweep(window: number): Promise<void>;
}

interface Entry {
  window: number;
  known: number; // the bucket's total across processes at the last flush (ours included)
  inFlight: number; // increments being flushed now
  pending: number; // increments not flushed yet
}

export interface Usage {
  used: number;
  /** Unix seconds at which the current window ends. */
  resetAt: number;
}

export class WindowCounters {
  private readonly entries = new Map<string, Entry>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private lastSweep = -1;
  private failures = 0;

  constructor(
    private readonly store: CounterStore,
    private readonly opts: { windowMs?: number; flushMs?: number; now?: () => number; log?: Logger } = {},
  ) {}

  private get windowMs() {
    return this.opts.windowMs ?? 60_000;
  }
  private now() {
    return (this.opts.now ?? Date.now)();
  }

  private entry(bucket: string, window: number): Entry {
    let e = this.entries.get(bucket);
    if (!e || e.window !== window) {
      // A new window starts from zero (what is still in flight belongs to the old one).
      e = { window, known: 0, inFlight: 0, pending: 0 };
      this.entries.set(bucket, e);
    }
    return e;
  }

  /** How much of the current window a bucket has used (across processes, as far as known). */
  usage(bucket: string): Usage {
    const window = Math.floor(this.now() / this.windowMs);
    const e = this.entry(bucket, window);
    return { used: e.known + e.inFlight + e.pending, resetAt: ((window + 1) * this.windowMs) / 1000 };
  }

  /** Counts one hit. */
  hit(bucket: string): void {
    this.entry(bucket, Math.floor(this.now() / this.windowMs)).pending += 1;
  }

  /** Counts one hit if the bucket is under `limit`; the usage after it either way. */
  take(bucket: string, limit: number): Usage & { allowed: boolean } {
    const u = this.usage(bucket);
    if (u.used >= limit) return { ...u, allowed: false };
    this.hit(bucket);
    return { used: u.used + 1, resetAt: u.resetAt, allowed: true };
  }

  /** Sends what is pending (if anything) to the store. Concurrent calls share one flush. */
  flush(): Promise<void> {
    this.flushing ??= this.doFlush().finally(() => (this.flushing = null));
    return this.flushing;
  }

  private async doFlush(): Promise<void> {
    const current = Math.floor(this.now() / this.windowMs);
    const batch: Increment[] = [];
    for (const [bucket, e] of this.entries) {
      if (e.pending > 0) {
        batch.push({ bucket, window: e.window, n: e.pending });
        e.inFlight += e.pending;
        e.pending = 0;
      } else if (e.window < current && e.inFlight === 0) {
        this.entries.delete(bucket); // an idle bucket of a past window
      }
    }
    if (batch.length > 0) {
      // One lock order for every process (PostgreSQL would otherwise be free to deadlock two flushes).
      batch.sort((a, b) => (a.bucket < b.bucket ? -1 : a.bucket > b.bucket ? 1 : 0));
      try {
        const totals = await this.store.add(batch);
        const byBucket = new Map(totals.map((t) => [t.bucket, t]));
        for (const inc of batch) {
          const e = this.entries.get(inc.bucket);
          if (!e || e.window !== inc.window) continue; // the window moved on meanwhile
          e.inFlight -= inc.n;
          const t = byBucket.get(inc.bucket);
          if (t && t.window === inc.window) e.known = Math.max(e.known, t.hits);
          else e.known += inc.n; // another process is in a later window already: ours is over anyway
        }
        this.failures = 0;
      } catch (err) {
        // The store is unreachable: keep counting here (limits stay exact in this process) and retry.
        for (const inc of batch) {
          const e = this.entries.get(inc.bucket);
          if (e && e.window === inc.window) {
            e.inFlight -= inc.n;
            e.pending += inc.n;
          }
        }
        if (this.failures++ % 100 === 0) this.opts.log?.warn({ err }, 'rate-limit counters could not be saved; counting in this process meanwhile');
      }
    }
    if (current > this.lastSweep) {
      this.lastSweep = current;
      await this.store.sweep(current - 1).catch(() => {});
    }
  }

  /** Flushes every `flushMs` while anything is pending. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), this.opts.flushMs ?? 100);
    this.timer.unref();
  }

  /** Stops the timer and flushes what is left. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }
}

/**
 * The counters in the database (table rate_limits, migration 008): one upsert adds every increment and
 * returns the totals. An increment for a window older than the stored one changes nothing; a newer one
 * starts the bucket's window afresh. On SQLite it goes through the store's group commit, so a flush
 * never waits for an fsync on the event loop (a counter lost in a power cut only errs on the lenient side).
 */
export function dbCounterStore(ctx: Pick<Ctx, 'db' | 'groupCommit'>): CounterStore {
  const commit: GroupCommit = commitOf(ctx);
  return {
    async add(increments) {
      const { result, durable } = await commit((tx) =>
        tx
          .insertInto('rate_limits')
          .values(increments.map((i) => ({ bucket: i.bucket, window_start: i.window, hits: i.n })))
          .onConflict((oc) =>
            oc.column('bucket').doUpdateSet((eb) => ({
              hits: eb
                .case()
                .when('rate_limits.window_start', '=', eb.ref('excluded.window_start'))
                .then(eb('rate_limits.hits', '+', eb.ref('excluded.hits')))
                .when('rate_limits.window_start', '<', eb.ref('excluded.window_start'))
                .then(eb.ref('excluded.hits'))
                .else(eb.ref('rate_limits.hits'))
                .end(),
              window_start: eb
                .case()
                .when('rate_limits.window_start', '<', eb.ref('excluded.window_start'))
                .then(eb.ref('excluded.window_start'))
                .else(eb.ref('rate_limits.window_start'))
                .end(),
            })),
          )
          .returning(['bucket', 'window_start', 'hits'])
          .execute(),
      );
      durable.catch(() => {}); // nothing waits for it
      return result.map((r) => ({ bucket: r.bucket, window: Number(r.window_start), hits: Number(r.hits) }));
    },
    async sweep(window) {
      const { durable } = await commit((tx) => tx.deleteFrom('rate_limits').where('window_start', '<', window).execute());
      durable.catch(() => {});
    },
  };
}
