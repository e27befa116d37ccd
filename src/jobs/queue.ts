// Durable jobs in the application database (transactional outbox): a job is inserted in the same
// transaction as the state change that needs it, so an accepted request can never lose its work.
// Workers claim jobs with a lease; a crashed worker's jobs are claimed again once the lease runs out.
import { EventEmitter } from 'node:events';
import { sql } from 'kysely';
import type { Db, DbOrTx, Dialect } from '../store/db.js';
import { executeHeld, insertRows } from '../store/inserts.js';
import { workersInOneProcess } from '../store/locks.js';
import type { Insertable, Selectable } from 'kysely';
import type { JobTable } from '../store/schema.js';
import { retryDelayMs } from '../domain/backoff.js';
import { isJobKind, kindOn, type KindCtx, type JobKind, type JobPayloads } from './kinds.js';
import { anyClaimable, claimableIds, claimableIdsQuery, NOT_DONE } from './claimable.js';

/** A claimed job. `kind` is as stored (a chain's own kind for chain work); the payload is its kind's. */
export interface Job<K extends JobKind = JobKind> {
  id: number;
  kind: string;
  ref: string;
  groupKey: string | null;
  payload: JobPayloads[K];
  attempts: number;
  maxAttempts: number;
}

/** What identifies a claim of a job: every claim counts one attempt, so a job claimed again since has more. */
export type ClaimedJob = Pick<Job, 'id' | 'attempts'>;

/** A kind whose payload has no required field may leave it out (it is stored as `{}`). */
// biome-ignore lint/complexity/noBannedTypes: `{} extends P` is the test for "every field of P is optional".
type PayloadOf<K extends JobKind> = {} extends JobPayloads[K] ? { payload?: JobPayloads[K] } : { payload: JobPayloads[K] };

export type EnqueueOptions<K extends JobKind = JobKind> = {
  kind: K;
  ref: string;
  groupKey?: string | null;
  runAt?: number;
  maxAttempts?: number;
} & PayloadOf<K>;

/** A job of any kind, its payload checked against its kind (for `enqueueMany`). */
export type AnyEnqueueOptions = { [K in JobKind]: EnqueueOptions<K> }[JobKind];

export class JobQueue {
  /** Local wake-ups so a job enqueued by this process starts without waiting for the next poll. */
  readonly signals = new EventEmitter();

  constructor(
    readonly db: Db,
    private readonly dialect: Dialect,
    private readonly now: () => number = Date.now,
  ) {
    this.signals.setMaxListeners(100);
  }

  /**
   * The kind stored for a job of `kind`: itself here; a chain's own kind in that chain's view of the
   * queue (`mapped`).
   */
  protected storedKind(kind: JobKind): string {
    return kind;
  }

  async enqueue<K extends JobKind>(tx: DbOrTx, opts: EnqueueOptions<K>): Promise<void> {
    await this.insert(tx, [opts]);
  }

  /** Inserts many jobs with one statement. */
  async enqueueMany(tx: DbOrTx, jobs: AnyEnqueueOptions[]): Promise<void> {
    await this.insert(tx, jobs);
  }

  private async insert(tx: DbOrTx, jobs: readonly (EnqueueOptions & { payload?: unknown })[]): Promise<void> {
    if (jobs.length === 0) return;
    await insertRows(tx, 'jobs', this.rowsOf(jobs));
  }

  /** The rows `enqueueMany` inserts, for a caller that inserts them together with its own (insertRowsTogether). */
  rowsOf(jobs: readonly (EnqueueOptions & { payload?: unknown })[]): Insertable<JobTable>[] {
    const t = this.now();
    return jobs.map((opts) => ({
      kind: this.storedKind(opts.kind),
      ref: opts.ref,
      group_key: opts.groupKey ?? null,
      payload: JSON.stringify(opts.payload ?? {}),
      status: 'queued' as const,
      run_at: opts.runAt ?? t,
      attempts: 0,
      max_attempts: opts.maxAttempts ?? 25,
      created_at: t,
      updated_at: t,
    }));
  }

  /** Also told of every notify: the API process forwards them to its worker process. */
  private forwards: ((kind: string) => void)[] = [];

  /** Call after the enqueueing transaction committed. */
  notify(kind: string): void {
    this.signals.emit(kind);
    for (const f of this.forwards) f(kind);
  }

  forwardNotifications(to: (kind: string) => void): void {
    this.forwards.push(to);
  }

  /**
   * This queue as seen by one chain's work: the kinds it enqueues, wakes and announces are mapped
   * (`asset.mint` -> that chain's mint kind), everything else is this queue itself.
   */
  mapped(kindOf: (kind: JobKind) => string): JobQueue {
    const view = Object.create(this) as JobQueue;
    view.storedKind = kindOf;
    // A wake-up names a job kind or another signal (webhooks): only job kinds are mapped.
    view.notify = (kind) => this.notify(isJobKind(kind) ? kindOf(kind) : kind);
    return view;
  }

  /**
   * Claims up to `limit` runnable jobs of a kind: queued and due, or running with an expired lease
   * (their worker died). The candidates are locked skipping those another worker holds
   * (store/locks.ts), so workers in many processes never block each other.
   */
  async claim(kind: string, limit: number, workerId: string, leaseMs: number): Promise<Job[]> {
    const t = this.now();
    // Most claims find nothing (a loop woken for a kind whose jobs another batch took, an idle poll).
    // A plain read says so without a write transaction: on SQLite that would take the database's write
    // lock, which the API's creates wait for.
    if (!(await anyClaimable(this.db, kind, t))) return [];
    const claimed = { status: 'running', lease_until: t + leaseMs, locked_by: workerId, attempts: sql<number>`attempts + 1`, updated_at: t } as const;
    const rows =
      this.dialect === 'postgres'
        ? await this.db
            .updateTable('jobs')
            .set(claimed)
            .where(sql<boolean>`id in (${claimableIdsQuery(this.db, kind, t, limit)})`)
            .returning(JOB_COLUMNS)
            .execute()
        : await this.db.transaction().execute(async (tx) => {
            const ids = await claimableIds(tx, kind, t, limit);
            if (ids.length === 0) return [];
            return tx.updateTable('jobs').set(claimed).where('id', 'in', ids).returning(JOB_COLUMNS).execute();
          });
    return rows.sort((a, b) => a.id - b.id).map(toJob);
  }

  async complete(tx: DbOrTx, jobId: number): Promise<void> {
    await this.completeMany(tx, [jobId]);
  }

  /** On PostgreSQL, in a transaction, sent with the transaction's next statement (store/inserts.ts, `executeHeld`). */
  async completeMany(tx: DbOrTx, jobIds: number[]): Promise<void> {
    if (jobIds.length === 0) return;
    await executeHeld(tx, tx.updateTable('jobs').set({ status: 'done', lease_until: null, updated_at: this.now() }).where('id', 'in', jobIds));
  }

  /**
   * Puts a job back for later without counting it as a failure (e.g. waiting for a wallet or a
   * deployment). Only as its holder claimed it (see `fail`): a handler that outlived its lease would
   * otherwise queue a job another worker runs now, and a third could claim it meanwhile.
   */
  async defer(tx: DbOrTx, job: ClaimedJob, delayMs: number): Promise<void> {
    await this.deferMany(tx, [job], delayMs);
  }

  /** `defer` for many jobs in one statement (a batch that waits as a whole: fees over the ceiling, full relayers). */
  async deferMany(tx: DbOrTx, jobs: readonly ClaimedJob[], delayMs: number): Promise<void> {
    if (jobs.length === 0) return;
    const t = this.now();
    // The jobs of a claim were claimed at a few attempt counts at most: a list of ids for each.
    const idsAt = new Map<number, number[]>();
    for (const j of jobs) {
      const ids = idsAt.get(j.attempts);
      if (ids) ids.push(j.id);
      else idsAt.set(j.attempts, [j.id]);
    }
    await tx
      .updateTable('jobs')
      .set({ status: 'queued', run_at: t + delayMs, lease_until: null, attempts: sql`case when attempts > 0 then attempts - 1 else 0 end`, updated_at: t })
      .where('status', '=', 'running') // only a job still running (see fail)
      .where((eb) => eb.or([...idsAt].map(([attempts, ids]) => eb.and([eb('id', 'in', ids), eb('attempts', '=', attempts)]))))
      .execute();
  }

  /**
   * Records a failure; schedules a retry with backoff, or marks the job failed for good. Returns true when
   * it failed for good here (its handler's `onDead` is then due). Only a job still running is touched: a handler that committed part of its batch (a group's
   * transaction, its jobs completed in it) and then threw has its whole batch failed by the worker, and
   * a completed job put back would be carried out a second time. Nor is a job claimed again since this
   * claim (a handler that outlived its lease): it runs elsewhere now.
   */
  async fail(job: Job, error: string): Promise<boolean> {
    const t = this.now();
    const final = job.attempts >= job.maxAttempts;
    const r = await this.db
      .updateTable('jobs')
      .set({
        status: final ? 'failed' : 'queued',
        run_at: final ? t : t + retryDelayMs(job.attempts),
        lease_until: null,
        last_error: error.slice(0, 2000),
        updated_at: t,
      })
      .where('id', '=', job.id)
      .where('status', '=', 'running') // a job completed before the batch threw stays done
      .where('attempts', '=', job.attempts) // every claim counts one: claimed again since (its lease ran out), it is not ours
      .executeTakeFirst();
    return final && Number(r.numUpdatedRows) > 0;
  }

  /** Makes waiting jobs of a group due now (e.g. mints waiting for a user's wallet). */
  async wakeGroup(tx: DbOrTx, kind: JobKind, groupKey: string): Promise<void> {
    await this.wakeGroups(tx, kind, [groupKey]);
  }

  /** wakeGroup for many groups. */
  async wakeGroups(tx: DbOrTx, kind: JobKind, groupKeys: string[]): Promise<void> {
    for (let i = 0; i < groupKeys.length; i += 500)
      await tx
        .updateTable('jobs')
        .set({ run_at: this.now() })
        .where('kind', '=', this.storedKind(kind))
        .where('group_key', 'in', groupKeys.slice(i, i + 500))
        .where('status', '=', sql.lit('queued')) // as a literal: the group index holds the queued jobs alone
        .execute();
  }

  /**
   * Puts back the jobs of these kinds left running by a previous run of the workers, when one process
   * runs every worker (store/locks.ts): they need not wait for their leases to run out. Elsewhere the
   * leases decide (another process may be running them).
   */
  async releaseAbandoned(kinds: string[]): Promise<void> {
    if (!workersInOneProcess(this.dialect) || kinds.length === 0) return;
    await this.db
      .updateTable('jobs')
      .set({ status: 'queued', lease_until: null })
      .where('kind', 'in', kinds)
      .where('status', '=', 'running')
      .where(...NOT_DONE)
      .execute();
  }

  /** Fails a running job for good now, without further attempts (e.g. its input can never work). */
  async failNow(tx: DbOrTx, jobId: number, error: string): Promise<void> {
    await tx
      .updateTable('jobs')
      .set({ status: 'failed', lease_until: null, last_error: error.slice(0, 2000), updated_at: this.now() })
      .where('id', '=', jobId)
      .where('status', '=', 'running')
      .execute();
  }

  /**
   * Deletes jobs finished (done or failed for good) before `cutoff`, walking the table in id order a
   * chunk at a time; jobs still queued or running are kept whatever their age. Returns how many went.
   */
  async pruneFinished(cutoff: number, chunk = 2000): Promise<number> {
    let deleted = 0;
    for (let after = 0; ; ) {
      const rows = await this.db
        .selectFrom('jobs')
        .select(['id', 'status', 'created_at', 'updated_at'])
        .where('id', '>', after)
        .orderBy('id')
        .limit(chunk)
        .execute();
      const done = rows.filter((r) => (r.status === 'done' || r.status === 'failed') && Number(r.updated_at) < cutoff).map((r) => r.id);
      if (done.length)
        deleted += Number(
          (await this.db.deleteFrom('jobs').where('id', 'in', done).where('status', 'in', ['done', 'failed']).executeTakeFirst()).numDeletedRows,
        );
      if (rows.length < chunk || rows.every((r) => Number(r.created_at) >= cutoff)) break;
      after = Number(rows[rows.length - 1].id);
    }
    return deleted;
  }

  async counts(): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('jobs')
      .select(['kind', 'status', (eb) => eb.fn.countAll<number>().as('n')])
      .where(...NOT_DONE)
      .groupBy(['kind', 'status'])
      .execute();
    return Object.fromEntries(rows.map((r) => [`${r.kind}.${r.status}`, Number(r.n)]));
  }
}

/** The job queue for work on `chainId`: chain job kinds are mapped to that chain's. */
export function queueOn(ctx: KindCtx & { queue: JobQueue }, chainId: number): JobQueue {
  return ctx.queue.mapped((k) => kindOn(ctx, k, chainId));
}

/** What a claimed job carries (a claim of thousands returns no more than this of each). */
const JOB_COLUMNS = ['id', 'kind', 'ref', 'group_key', 'payload', 'attempts', 'max_attempts'] as const;

function toJob(r: Pick<Selectable<JobTable>, (typeof JOB_COLUMNS)[number]>): Job {
  return {
    id: r.id,
    kind: r.kind,
    ref: r.ref,
    groupKey: r.group_key,
    // Written by enqueue from a payload of the job's kind; the worker hands it to that kind's handler.
    payload: JSON.parse(r.payload),
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
  };
}
