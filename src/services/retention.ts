// Retention: what only records the past is pruned after RETENTION_DAYS, so no table grows without bound.
//   - events, with their webhook deliveries once those are over (delivered, expired, or disabled past
//     their 72-hour deadline); an event whose delivery is still open stays, whatever its age;
//   - webhook attempts (the log);
//   - finished jobs (done or failed for good);
//   - the raw signed bytes of chain transactions mined or reverted and handled (the row, hash, block
//     and outcome stay: assets and transfers point at it).
// Each table is walked in primary-key order (ids grow with time), a chunk per short transaction, and
// the walk stops at the first chunk with nothing old in it (a few rows out of time order, e.g. from
// several processes, do not stop it early): never a full scan, never a long lock.
import type { Logger } from 'pino';
import type { Ctx } from './context.js';

const DAY_MS = 86_400_000;
const CHUNK = 2000;
/** The first round runs this long after the start (not in the middle of start-up), then hourly. */
const FIRST_DELAY_MS = 60_000;
const EVERY_MS = 3_600_000;

export interface Pruned {
  events: number;
  webhook_deliveries: number;
  webhook_attempts: number;
  jobs: number;
  chain_tx_raw: number;
}

/** Prunes everything older than `days` days before `now`. */
// Long: one list of tables pruned in turn, a short entry each.
export async function pruneOnce(ctx: Pick<Ctx, 'db' | 'queue'>, days: number, now = Date.now()): Promise<Pruned> {
  const cutoff = now - days * DAY_MS;
  const out: Pruned = { events: 0, webhook_deliveries: 0, webhook_attempts: 0, jobs: 0, chain_tx_raw: 0 };
  const db = ctx.db;

  // Events and their finished deliveries.
  for (let after = 0; ; ) {
    const rows = await db
      .selectFrom('events as e')
      .leftJoin('webhook_deliveries as d', 'd.event_id', 'e.id')
      .select(['e.seq', 'e.id', 'e.created_at_ms', 'd.status', 'd.deadline_at'])
      .where('e.seq', '>', after)
      .orderBy('e.seq')
      .limit(CHUNK)
      .execute();
    const old = rows.filter((r) => Number(r.created_at_ms) < cutoff);
    const over = old.filter(
      (r) => r.status === null || r.status === 'delivered' || r.status === 'expired' || (r.status === 'disabled' && Number(r.deadline_at) <= now),
    );
    if (over.length) {
      await db.transaction().execute(async (tx) => {
        const withDelivery = over.filter((r) => r.status !== null).map((r) => r.id);
        // Conditional: a delivery redelivered meanwhile is open again and keeps its event.
        if (withDelivery.length) {
          const d = await tx
            .deleteFrom('webhook_deliveries')
            .where('event_id', 'in', withDelivery)
            .where('status', '!=', 'pending')
            .where((eb) => eb.or([eb('status', '!=', 'disabled'), eb('deadline_at', '<=', now)]))
            .executeTakeFirst();
          out.webhook_deliveries += Number(d.numDeletedRows);
        }
        const e = await tx
          .deleteFrom('events')
          .where(
            'id',
            'in',
            over.map((r) => r.id),
          )
          .where(({ not, exists, selectFrom }) =>
            not(exists(selectFrom('webhook_deliveries').select('event_id').whereRef('webhook_deliveries.event_id', '=', 'events.id'))),
          )
          .executeTakeFirst();
        out.events += Number(e.numDeletedRows);
      });
    }
    if (rows.length < CHUNK || old.length === 0) break; // a whole chunk to keep: the rest is younger
    after = Number(rows[rows.length - 1].seq);
  }

  // The attempt log.
  for (let after = 0; ; ) {
    const rows = await db.selectFrom('webhook_attempts').select(['id', 'attempted_at']).where('id', '>', after).orderBy('id').limit(CHUNK).execute();
    const old = rows.filter((r) => Number(r.attempted_at) < cutoff).map((r) => r.id);
    if (old.length) out.webhook_attempts += Number((await db.deleteFrom('webhook_attempts').where('id', 'in', old).executeTakeFirst()).numDeletedRows);
    if (rows.length < CHUNK || old.length === 0) break;
    after = Number(rows[rows.length - 1].id);
  }

  // Finished jobs. Jobs still queued or running are kept whatever their age; the walk steps over them.
  out.jobs = await ctx.queue.pruneFinished(cutoff, CHUNK);

  // Raw bytes of settled chain transactions ('' once pruned).
  for (let after = 0; ; ) {
    const rows = await db
      .selectFrom('chain_txs')
      .select(['id', 'status', 'handled', 'created_at', 'updated_at', 'raw'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(CHUNK)
      .execute();
    const settled = rows
      .filter((r) => (r.status === 'mined' || r.status === 'reverted') && r.handled === 1 && r.raw !== '' && Number(r.updated_at) < cutoff)
      .map((r) => r.id);
    if (settled.length)
      out.chain_tx_raw += Number(
        (await db.updateTable('chain_txs').set({ raw: '' }).where('id', 'in', settled).where('handled', '=', 1).executeTakeFirst()).numUpdatedRows,
      );
    if (rows.length < CHUNK || rows.every((r) => Number(r.created_at) >= cutoff)) break;
    after = Number(rows[rows.length - 1].id);
  }
  return out;
}

/** Runs pruneOnce in the workers: a minute after the start, then every hour. RETENTION_DAYS=0: never. */
export class Pruner {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly ctx: Ctx,
    private readonly days: number,
    private readonly log: Logger,
  ) {}

  start(): void {
    if (this.days <= 0) return;
    this.timer = setTimeout(() => this.round(), FIRST_DELAY_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private round(): void {
    const t = Date.now();
    this.running = pruneOnce(this.ctx, this.days)
      .then((p) => {
        if (Object.values(p).some((n) => n > 0)) this.log.info({ ...p, ms: Date.now() - t, days: this.days }, 'retention: pruned');
      })
      .catch((err) => this.log.error({ err }, 'retention: pruning failed (tried again in an hour)'))
      .finally(() => {
        this.running = null;
        if (this.timer) {
          this.timer = setTimeout(() => this.round(), EVERY_MS);
          this.timer.unref();
        }
      });
  }
}
