// Row locks and worker leases: what the two databases mean by them, for the code above the store, so
// that no service, dispatcher or job has to know which database it runs on.
//
// PostgreSQL has row locks, and several processes may run workers against one database. SQLite has
// neither: every write transaction holds the whole database from its BEGIN (IMMEDIATE, see db.ts),
// which already excludes every other writer, and one service process runs the workers. The SQLite
// store therefore leaves the locking clauses below out of the SQL it sends.
import { PostgresAdapter, sql, type SelectQueryBuilder } from 'kysely';
import type { Dialect, DbOrTx } from './db.js';

/** The rows read stay locked against writers until the transaction ends (FOR UPDATE). */
export function lockForUpdate<DB, TB extends keyof DB, O>(q: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O> {
  return q.forUpdate();
}

/** The rows read cannot change until the transaction ends; other readers may lock them too (FOR SHARE). */
export function lockForShare<DB, TB extends keyof DB, O>(q: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O> {
  return q.forShare();
}

/**
 * Claims the rows read, passing over those another transaction has locked (FOR UPDATE SKIP LOCKED):
 * workers in several processes then never wait for each other.
 */
export function skipLocked<DB, TB extends keyof DB, O>(q: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O> {
  return q.forUpdate().skipLocked();
}

/**
 * The locks of `lockForTransaction`, each for one pair of transactions that must not interleave, with
 * the number both sides agree on (in one place, so that no two pairs share one by accident):
 * - `walletsMade`: a deferral of mints until their wallets are made (exclusive) and a transaction that
 *   makes wallets and wakes their mints (shared);
 * - `rewardDeployed`: a deferral of allocations until their reward is deployed (exclusive) and a
 *   deployment's outcome, which marks the reward deployed and wakes them (shared);
 * - `collectionDeployed`: the same for mints (of assets and of items) and their collection.
 * In both, the waiter reads what it waits for and defers itself in two steps, and a wake-up between
 * them found it still claimed: it then waited out its whole delay.
 */
const TRANSACTION_LOCKS = { walletsMade: 0x6d770001, rewardDeployed: 0x6d770002, collectionDeployed: 0x6d770003 } as const;
export type TransactionLock = keyof typeof TRANSACTION_LOCKS;

/**
 * A lock held until the transaction ends, for two kinds of transactions that must not interleave
 * although no row they write comes first in both: `exclusive` waits for every holder, `shared` only
 * for an exclusive one. On PostgreSQL a transaction-level advisory lock (released by the commit or
 * rollback, so it works behind a transaction pooler too). SQLite needs none: its write transactions
 * take turns.
 */
export async function lockForTransaction(tx: DbOrTx, lock: TransactionLock, mode: 'shared' | 'exclusive'): Promise<void> {
  if (!(tx.getExecutor().adapter instanceof PostgresAdapter)) return;
  const fn = mode === 'shared' ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock';
  await sql`select ${sql.raw(fn)}(${sql.lit(TRANSACTION_LOCKS[lock])})`.execute(tx);
}

/**
 * True when one process runs every worker of the installation, so that a lease found when the workers
 * start can only have been left by a previous run of that process (and is taken back at once instead of
 * waiting for it to run out). SQLite: yes. PostgreSQL: other processes may hold live leases.
 */
export function workersInOneProcess(dialect: Dialect): boolean {
  return dialect === 'sqlite';
}
