// The SQLite store: one file in WAL mode, commits made durable by a flush of their own (wal.ts), a
// checkpointer beside the writers, and the process's row counters for cached reads.
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely } from 'kysely';
import type { Database } from '../schema.js';
import { SqliteChanges } from './changes.js';
import { rowVersions, type ChangeFeed } from '../row-versions.js';
import type { Checkpoints, Store } from '../db.js';
import { startCheckpointer, WalSync } from './wal.js';
import { withStatementCache } from './statements.js';
import { DurableSqliteDialect } from './dialect.js';

/**
 * The WAL file's size kept once SQLite writes it again from its start: a burst of creates writes
 * hundreds of MB to it, and a busy hour's ordinary writes need a few.
 */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/** `checkpoints`: who checkpoints the WAL; `flushedBy`: see openSqliteStore; `walSizeLimitBytes`: WAL_SIZE_LIMIT_BYTES (tests). */
export interface SqliteStoreOptions {
  databaseUrl?: string;
  dataDir: string;
  checkpoints?: Checkpoints;
  flushedBy?: 'commit' | 'caller';
  walSizeLimitBytes?: number;
}

/**
 * SQLite: the counters move right after each commit of the process's own connections, so it is always
 * caught up. Commits of another process on the same file are seen as a new `data_version` of this
 * connection, and they move every counter: SQLite cannot say which rows they changed.
 */
function sqliteChangeFeed(database: SQLite.Database, othersWrite: boolean): ChangeFeed {
  if (!othersWrite) return { start: async () => {}, caughtUp: () => true, stop: async () => {} };
  const dataVersion = database.prepare('pragma data_version').pluck();
  let seen = dataVersion.get();
  return {
    start: async () => {},
    caughtUp: () => {
      const now = dataVersion.get();
      if (now !== seen) {
        seen = now;
        rowVersions().bumpEverything();
      }
      return true;
    },
    stop: async () => {},
  };
}

/** The SQLite database file: `sqlite:<file>` in DATABASE_URL, else DATA_DIR/mintworks.sqlite. */
export function sqliteFile(databaseUrl: string | undefined, dataDir: string): string {
  return databaseUrl?.startsWith('sqlite:') ? path.resolve(databaseUrl.slice('sqlite:'.length)) : path.join(dataDir, 'mintworks.sqlite');
}

/** The store's settings of its connection to the file. */
function configureConnection(database: SQLite.Database, walSizeLimitBytes: number): void {
  database.pragma('journal_mode = WAL');
  // Commits do not flush the WAL themselves: with synchronous = FULL every commit would hold SQLite's
  // write lock through an fsync, and every other writer (the workers' thread, the API's next group, the
  // CLI) would wait on the disk. DurableSqliteDriver flushes the WAL right after each commit instead,
  // before the transaction's caller goes on, so a commit is exactly as durable as with FULL when anyone
  // acts on it, and the lock is already free.
  database.pragma('synchronous = NORMAL');
  // No blocking busy handler: it would stall the event loop while another process (the worker process,
  // the CLI) holds the write lock. BusyRetryConnection waits for the lock asynchronously instead.
  database.pragma('busy_timeout = 0');
  database.pragma('foreign_keys = ON');
  // A statement that writes many rows (a group's multi-row insert, a mint's mark of 400 assets) keeps
  // the pages it changes in a statement journal, so that a failure undoes the statement alone. SQLite
  // keeps that journal in memory up to 64 KB, then spills it to a temporary file: every group of creates
  // opened, wrote page by page (two system calls a page) and unlinked one, a third of the bytes a
  // create wrote. In memory it is freed with the statement (temporary tables and indexes are kept there
  // too); migrations, whose statements may change every row of a table, spill it (migrate.ts).
  database.pragma('temp_store = MEMORY');
  // better-sqlite3's default page cache is 16 MB per connection, and a process holds three or four
  // (the API's, the creates' and the workers' threads, the checkpointer): through an 80,000-create burst
  // they filled, ~10-20 MB more peak memory than with 4 MB each; what misses it comes from the OS's cache.
  database.pragma('cache_size = -4000');
  // Checkpoints (copying the WAL back into the database file, with two fsyncs) would run inside some
  // request's commit every 1000 pages; a checkpointer of their own does them instead (startCheckpointer).
  database.pragma('wal_autocheckpoint = 0');
  // A WAL written again from its start (after a checkpoint copied it all back) keeps the size a burst
  // gave it; the first commit after that start cuts the file back to this size.
  database.pragma(`journal_size_limit = ${walSizeLimitBytes}`);
}

/**
 * `flushedBy: 'caller'` (SQLite): commits are not flushed to disk one by one; whoever acts on them calls
 * `flush()` or `flushNow()` first, of this store or another on the same file. For a thread that writes
 * and hands its results to another (the creates' thread: one blocking flush before it sends a group's
 * answers): a flush of each commit in the thread pool would be seen only when this thread's event loop
 * comes round, after its next group.
 */
export function openSqliteStore(opts: SqliteStoreOptions): Store {
  const url = opts.databaseUrl;
  const file = sqliteFile(url, opts.dataDir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const database = new SQLite(file);
  configureConnection(database, opts.walSizeLimitBytes ?? WAL_SIZE_LIMIT_BYTES);
  const checkpointer = startCheckpointer(file, opts.checkpoints ?? 'thread');
  const wal = new WalSync(`${file}-wal`, opts.flushedBy === 'caller');
  const changes = new SqliteChanges(database);
  const dialect = new DurableSqliteDialect(withStatementCache(database), database, wal, changes);
  const db = new Kysely<Database>({ dialect });
  return {
    db,
    dialect: 'sqlite',
    describe: file,
    flush: () => wal.flushAll(),
    flushNow: () => wal.flushNow(),
    captureChanges: () => changes.install(),
    changeFeed: (_log, { othersWrite }) => sqliteChangeFeed(database, othersWrite),
    close: async () => {
      await checkpointer.stop();
      await db.destroy();
      await wal.close();
    },
    groupCommit: async (fn) => {
      // The connection is held throughout, so the commit whose flush is deferred is this one.
      return db.connection().execute(async (conn) => {
        const driver = dialect.driver!;
        driver.deferNextSync = true;
        try {
          const result = await conn.transaction().execute(fn);
          return { result, durable: driver.takeDeferredSync() };
        } finally {
          driver.deferNextSync = false;
        }
      });
    },
  };
}
