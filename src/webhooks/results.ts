// The webhook dispatcher's writes: each claimed delivery's next state, guarded by its lease token, and
// the attempts' log, group-committed. Writes submitted while a transaction runs go together into the
// next one; their flush to disk is not waited for (a result lost to a power cut means one more attempt,
// which at-least-once delivery allows: receivers dedupe on event_id).
import type { Logger } from 'pino';
import type { InfraCtx } from '../config/infra-context.js';
import { commitOf, type Tx } from '../store/db.js';
import type { DeliveryRow } from './deliveries.js';

/** A delivery this process leased, with the token its lease was taken under. */
export type Claimed = DeliveryRow & { token: string };
type Write = (tx: Tx) => Promise<void>;

/** Writes per transaction of the group commit. */
const GROUP_MAX = 200;

export class DeliveryResults {
  private pending: { write: Write; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private flushing = false;
  private readonly flushes = new Set<Promise<void>>(); // results being flushed to disk: a stop waits for them

  constructor(
    private readonly ctx: InfraCtx,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {}

  /** A write transaction whose flush to disk is not waited for on the event loop (SQLite). */
  commit<T>(fn: (tx: Tx) => Promise<T>): Promise<{ result: T; durable: Promise<void> }> {
    return commitOf(this.ctx)(fn);
  }

  /** Updates the claimed row, if this claim still holds it (its lease given back). */
  settle(row: Claimed, set: Partial<DeliveryRow>): Promise<void> {
    return this.record((tx) => this.update(tx, row, set).then(() => undefined));
  }

  /** The claimed row's next state, within a transaction of the caller's; the lease is given back. */
  update(tx: Tx, row: Claimed, set: Partial<DeliveryRow>) {
    return tx
      .updateTable('webhook_deliveries')
      .set({ updated_at_ms: this.now(), ...set, lease_until: null, locked_by: null })
      .where('event_id', '=', row.event_id)
      .where('locked_by', '=', row.token)
      .execute();
  }

  /** Runs `write` in the next group's transaction; resolves once it is committed. */
  record(write: Write): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ write, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  /** Every write recorded so far committed and flushed to disk. */
  async drain(): Promise<void> {
    await this.record(async () => {}); // queued last: every write before it is committed first
    await Promise.all([...this.flushes]);
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.pending.length) {
        const batch = this.pending.splice(0, GROUP_MAX);
        try {
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
}
