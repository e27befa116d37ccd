// The store's vocabulary: the database handle and transaction types, the Store every process opens
// (store/open.ts picks SQLite or PostgreSQL), group commits, and what both databases answer alike.
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from './schema.js';
import type { ChangeFeed } from './row-versions.js';
import type { PoolSnapshot } from './pool-snapshot.js';

export type Dialect = 'sqlite' | 'postgres';
export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
export type DbOrTx = Db | Tx;

export interface Store {
  db: Db;
  dialect: Dialect;
  describe: string;
  close(): Promise<void>;
  /**
   * A transaction for a high-volume write that must be durable before anyone is told about it (the
   * 201 of a create). On SQLite its commit does not wait for the disk on the event loop: the WAL is
   * flushed afterwards by one `fsync` in the thread pool, shared by every such commit in flight:
   * `durable` settles then (the next group can be written meanwhile). On PostgreSQL it is a plain
   * transaction, durable once committed.
   */
  groupCommit: GroupCommit;
  /**
   * Makes every commit so far durable, whichever connection of the process made it (on SQLite one
   * flush of the WAL file covers them all; on PostgreSQL a commit already is). What a store opened
   * with `flushedBy: 'caller'` relies on.
   */
  flush(): Promise<void>;
  /**
   * `flush`, blocking this thread until it is done. For a thread with nothing else to do meanwhile (the
   * creates' thread, whose answers then leave durable). Nothing to do on PostgreSQL, as for `flush`.
   */
  flushNow(): void;
  /**
   * From now on, changes of the rows cached reads depend on bump the process's row counters
   * (store/row-versions.ts). Called once the migrations are applied. On PostgreSQL the migrations' own
   * triggers announce them instead (store/postgres/changes.ts).
   */
  captureChanges(): void;
  /**
   * How cached reads know every change committed so far is counted (store/row-versions.ts).
   * `othersWrite`: other processes write too (SQLite with the workers in a process of their own).
   * Null when nothing can tell (PostgreSQL behind a transaction pooler without a direct connection):
   * reads then go to the database.
   */
  changeFeed(log: Logger, opts: { othersWrite: boolean }): ChangeFeed | null;
  /**
   * PostgreSQL: wake-ups of job kinds other processes insert (migration 019), passed to `onWake` (`*`:
   * every kind, after a reconnection). Null when there is no session to LISTEN on: workers then poll.
   */
  wakeups?(log: Logger, onWake: (kind: string) => void): ChangeFeed | null;
  /** Where the migrations run, when not on `db` (PostgreSQL: under a transaction's lock, on the direct connection if any). */
  migrationDb?(): Db;
  /** PostgreSQL: this pool's connections and the waits for one (/health, /metrics). */
  poolStats?(): PoolSnapshot;
}

export type GroupCommit = <T>(fn: (tx: Tx) => Promise<T>) => Promise<{ result: T; durable: Promise<void> }>;

/** A plain transaction, durable once committed (PostgreSQL, and contexts without a store's group commit). */
export function plainGroupCommit(db: Db): GroupCommit {
  return async (fn) => ({ result: await db.transaction().execute(fn), durable: Promise.resolve() });
}

/** The group commit of a context that may have a store's: a plain transaction when it has none. */
export function commitOf(ctx: { db: Db; groupCommit?: GroupCommit }): GroupCommit {
  return ctx.groupCommit ?? plainGroupCommit(ctx.db);
}

/**
 * Who checkpoints a SQLite WAL (copies it back into the database file): a thread of the store's own
 * (`thread`, the default), a timer on this thread's event loop with a connection of its own (`inline`:
 * for the workers' thread, which the API does not wait on), or someone else (`none`: the process's
 * workers' thread does it, or a short-lived CLI). Each thread costs an isolate (~17 MB).
 */
export type Checkpoints = 'thread' | 'inline' | 'none';

export function redactUrl(u: string): string {
  return u.replace(/\/\/([^:@/]+):([^@/]+)@/, '//$1:***@');
}

export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}

/** True when err is a unique-constraint violation (either database), optionally on a given index/column. */
export function isUniqueViolation(err: unknown, hint?: string): boolean {
  const e = err as { code?: string; message?: string; constraint?: string };
  const unique = e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
  if (!unique || !hint) return unique;
  return (e.constraint ?? '').includes(hint) || (e.message ?? '').includes(hint);
}
