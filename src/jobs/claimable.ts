// Which jobs a claim may take (store/locks.ts locks them; jobs/queue.ts claims them): the queries of
// the claim index (kind, status, run_at).
import { sql } from 'kysely';
import type { DbOrTx } from '../store/db.js';
import { skipLocked } from '../store/locks.js';
import { precompiled } from '../store/precompiled.js';

/**
 * Whether a claim at time `t` would find a job of `kind`: both of the claim's ranges (see
 * claimableIds) in one statement. Every job loop polls its kind every half second to two seconds when
 * nothing wakes it, so this is most of what an idle installation asks its database: on PostgreSQL one
 * round trip per poll instead of two.
 */
export async function anyClaimable(db: DbOrTx, kind: string, t: number): Promise<boolean> {
  let poll = polls.get(kind);
  if (!poll) {
    // The kind and statuses as literals, the time the only parameter (see `polls`).
    poll = precompiled(1, (pdb, time) => {
      const at = time as unknown as number; // the placeholder, where the time goes
      const due = (status: JobStatus) => dueJobs(pdb, kind, status, at, true);
      return pdb.selectNoFrom((eb) => eb.or([eb.exists(due('running')), eb.exists(due('queued'))]).as('any'));
    });
    polls.set(kind, poll);
  }
  const [r] = await poll(db, t);
  // SQLite answers 1 or 0, PostgreSQL a boolean.
  return Number(r.any) === 1;
}

/**
 * The poll of each kind, built once and named on PostgreSQL. With the kind and the statuses as
 * parameters the server planned it at every poll (0.2 ms on an idle installation, seven times its run):
 * the plan it would keep, made for any kind, was costed above one made for the kind at hand. With them
 * as literals the time is the only parameter, and the plan is the same for any time: the claim index's
 * two ranges.
 */
const polls = new Map<string, ReturnType<typeof precompiled<{ any: unknown }, 1>>>();

/**
 * Up to `limit` runnable jobs of a kind at time `t`, locked for the claim's transaction `tx` (skipping
 * those another worker holds): running ones whose lease expired (a crashed worker's, the oldest work),
 * then queued ones that are due, oldest first. Two queries, each a range of the claim index (kind,
 * status, run_at) read in order: as one query with `status = … or status = …` the planner could only
 * use `kind`, and read every job of the kind, the finished ones included, then sorted them, for each
 * claim.
 */
export async function claimableIds(tx: DbOrTx, kind: string, t: number, limit: number): Promise<number[]> {
  const ofStatus = (status: JobStatus, n: number) => skipLocked(dueJobs(tx, kind, status, t).orderBy('run_at').orderBy('id').limit(n)).execute();
  const expired = await ofStatus('running', limit);
  const queued = expired.length < limit ? await ofStatus('queued', limit - expired.length) : [];
  return [...expired, ...queued].map((r) => r.id);
}

/**
 * PostgreSQL: the ids a claim takes, as a subquery of the claim's update (one statement: the ranges of
 * claimableIds in turn, the expired leases first, up to `limit` in all; a row is locked only once the
 * outer limit reads it). As a query of its own followed by the update, a claim took a transaction of
 * two statements, the second with an id per parameter (a drain's claims take a thousand jobs and more).
 */
export function claimableIdsQuery(tx: DbOrTx, kind: string, t: number, limit: number) {
  const ofStatus = (status: JobStatus) => skipLocked(dueJobs(tx, kind, status, t).orderBy('run_at').orderBy('id').limit(limit));
  // Each range in a subquery of its own: PostgreSQL refuses a locking clause on an arm of a union.
  return sql<{
    id: number;
  }>`select id from (select id from ${ofStatus('running')} as expired union all select id from ${ofStatus('queued')} as due) as claimable limit ${limit}`;
}

type JobStatus = 'running' | 'queued';

/**
 * The claim index's predicate (it holds the jobs not done), as a term for a query on it: SQLite uses a
 * partial index only for a query that has its WHERE term, a literal, whatever else the query says.
 */
export const NOT_DONE = ['status', '<>', sql.lit('done' as const)] as const;

/**
 * `kind`'s jobs still to be carried out (queued or running: not done, not failed), read through the claim
 * index: for a caller outside the queue that asks what is under way.
 */
export function jobsUnderWay(db: DbOrTx, kind: string) {
  return db
    .selectFrom('jobs')
    .where('kind', '=', kind)
    .where('status', 'in', ['queued', 'running'])
    .where(...NOT_DONE);
}

/** The ids of `kind`'s jobs in `status` a claim at `t` may take: running ones whose lease lapsed, queued ones that are due. */
function dueJobs(db: DbOrTx, kind: string, status: JobStatus, t: number, literals = false) {
  const q = db
    .selectFrom('jobs')
    .select('id')
    .where('kind', '=', literals ? sql.lit(kind) : kind)
    .where('status', '=', literals ? sql.lit(status) : status)
    .where(...NOT_DONE);
  return status === 'running' ? q.where('lease_until', '<', t) : q.where('run_at', '<=', t);
}
