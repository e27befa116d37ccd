// Kysely's SQLite dialect made durable and lock-aware: BEGIN IMMEDIATE, a WAL flush after each commit,
// row-lock clauses left out, and SQLITE_BUSY waited for without blocking the event loop.
import type SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  SqliteDialect,
  SqliteDriver,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type QueryResult,
  type SelectQueryNode,
  type SqliteDialectConfig,
} from 'kysely';
import type { SqliteChanges } from './changes.js';
import { goesFirst, writeTurns, type WriteTurns } from '../write-turns.js';
import type { WalSync } from './wal.js';
import type { CachedStatements } from './statements.js';

/**
 * Transactions take SQLite's write lock at BEGIN (BEGIN IMMEDIATE). With a plain deferred BEGIN, a
 * transaction that reads and then writes while another process (the CLI beside the service) has
 * written in between fails at once with "database is locked" instead of waiting for the lock.
 * Every commit, and every write outside a transaction, is followed by a flush of the WAL (WalSync)
 * before it returns: see `synchronous = NORMAL` above.
 */
export class DurableSqliteDialect extends SqliteDialect {
  driver: DurableSqliteDriver | null = null;

  constructor(
    private readonly statements: CachedStatements,
    private readonly database: SQLite.Database,
    private readonly wal: WalSync,
    private readonly changes: SqliteChanges,
  ) {
    super({ database: statements });
  }
  override createQueryCompiler() {
    return new LocklessSqliteCompiler();
  }
  override createDriver() {
    this.driver = new DurableSqliteDriver({ database: this.statements }, this.statements, this.database, this.wal, this.changes);
    return this.driver;
  }
}

class DurableSqliteDriver extends SqliteDriver {
  /** Set by a group commit holding the connection: its commit hands the flush back instead of awaiting it. */
  deferNextSync = false;
  private deferred: Promise<void> | null = null;

  constructor(
    cfg: SqliteDialectConfig,
    private readonly statements: CachedStatements,
    private readonly database: SQLite.Database,
    private readonly wal: WalSync,
    private readonly changes: SqliteChanges,
  ) {
    super(cfg);
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const writes = (text: string) => !this.statements.prepare(text).readonly;
    return new BusyRetryConnection(
      await super.acquireConnection(),
      this.database,
      SQLITE_LOCK_WAIT_MS,
      { writes, sync: () => this.wal.sync(), settled: () => this.changes.settle() },
      { shared: writeTurns(), main: goesFirst() },
    );
  }
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
    const durable = this.wal.sync();
    if (!this.deferNextSync) return durable;
    this.deferNextSync = false;
    this.deferred = durable;
    durable.catch(() => {}); // the group commit's caller handles it
  }
  takeDeferredSync(): Promise<void> {
    const d = this.deferred ?? Promise.resolve();
    this.deferred = null;
    return d;
  }
}

/** The row-locking clauses of a SELECT (store/locks.ts): SQLite has no such syntax. */
const ROW_LOCKS = new Set(['ForUpdate', 'ForNoKeyUpdate', 'ForShare', 'ForKeyShare', 'NoWait', 'SkipLocked']);

/**
 * Leaves row locks out of SQLite's SQL. A transaction there holds the database's write lock from BEGIN
 * IMMEDIATE on, which already gives what FOR UPDATE / FOR SHARE / SKIP LOCKED ask for, so the code
 * above the store can ask for row locks without knowing the database.
 */
class LocklessSqliteCompiler extends SqliteQueryCompiler {
  protected override visitSelectQuery(node: SelectQueryNode): void {
    const mods = node.endModifiers;
    if (mods?.some((m) => m.modifier !== undefined && ROW_LOCKS.has(m.modifier))) {
      node = { ...node, endModifiers: mods.filter((m) => m.modifier === undefined || !ROW_LOCKS.has(m.modifier)) };
    }
    super.visitSelectQuery(node);
  }
}

/** How long a statement waits for another process's write lock before "database is locked". */
export const SQLITE_LOCK_WAIT_MS = 5000;

/**
 * Waits for SQLite's write lock without blocking the event loop. better-sqlite3 is synchronous, so
 * its busy handler (busy_timeout) would sleep on the event loop while another process writes; with
 * busy_timeout = 0 a statement that finds the lock taken fails at once with SQLITE_BUSY, and is retried
 * here after a short timer (or as soon as another thread of the process releases the lock), while
 * requests go on being parsed and grouped. Only statements outside a transaction are retried (BEGIN
 * IMMEDIATE itself, autocommit statements): inside one the lock is held.
 */
export class BusyRetryConnection implements DatabaseConnection {
  constructor(
    private readonly inner: DatabaseConnection,
    private readonly database: { readonly inTransaction: boolean },
    private readonly waitMs = SQLITE_LOCK_WAIT_MS,
    /**
     * A write outside a transaction is flushed (`sync`) before it returns, as a commit is; `settled`
     * runs after every statement, before that flush (what a commit changed is visible from then on).
     */
    private readonly durability?: { writes(sql: string): boolean; sync(): Promise<void>; settled?(): void },
    /** Turns at the write lock with the process's other threads (store/write-turns.ts); `main`: goes first. */
    private readonly turns?: { shared: WriteTurns; main: boolean },
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const turns = this.turns;
    const outside = !this.database.inTransaction;
    // Outside a transaction, a statement that is not read-only takes the write lock (BEGIN IMMEDIATE too).
    const writesOutside = outside && this.durability?.writes(query.sql) === true;
    const takesLock = outside && turns !== undefined && (writesOutside || query.sql === 'begin immediate');
    if (takesLock && !turns.main) await turns.shared.mainFirst();
    let delay = 0;
    let waiting = false;
    // On the monotonic clock: setting the wall clock (NTP, a VM's resync) moves no deadline.
    const deadline = performance.now() + this.waitMs;
    try {
      for (;;) {
        const mark = turns?.shared.mark() ?? 0; // a release after this attempt wakes the wait below
        try {
          const result = await this.inner.executeQuery<R>(query);
          this.durability?.settled?.();
          if (!this.database.inTransaction && (!outside || takesLock)) turns?.shared.released();
          if (writesOutside && !this.database.inTransaction) await this.durability!.sync(); // a write on its own, not BEGIN
          return result;
        } catch (err) {
          const busy = String((err as { code?: string }).code ?? '').startsWith('SQLITE_BUSY');
          if (!busy || this.database.inTransaction || performance.now() >= deadline) throw err;
          if (turns?.main && !waiting) turns.shared.mainWaiting((waiting = true));
          // Short and capped: the other writer's transactions last a few ms, and a long sleep would
          // leave the lock idle while requests queue up behind this one. A thread of this process that
          // releases the lock ends the wait at once.
          if (turns) await turns.shared.untilReleased(mark, Math.max(delay, 1));
          else await new Promise((r) => (delay === 0 ? setImmediate(r) : setTimeout(r, delay)));
          delay = Math.min(delay + 1, 4);
        }
      }
    } finally {
      if (waiting) turns!.shared.mainWaiting(false);
    }
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}
