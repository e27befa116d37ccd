// One kysely database over SQLite (default, a file in DATA_DIR, WAL) or PostgreSQL (DATABASE_URL).
// The schema and migrations are shared; the few dialect differences are named here.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { CompiledQuery, Kysely, type Compilable, PostgresDialect, SqliteDialect, SqliteDriver, sql, type DatabaseConnection, type QueryResult, type SqliteDialectConfig, type Transaction } from 'kysely';
import type { Database } from './schema.js';

const require = createRequire(import.meta.url);

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
}

export type GroupCommit = <T>(fn: (tx: Tx) => Promise<T>) => Promise<{ result: T; durable: Promise<void> }>;

/** A plain transaction, durable once committed (PostgreSQL, and contexts without a store's group commit). */
export function plainGroupCommit(db: Db): GroupCommit {
  return async (fn) => ({ result: await db.transaction().execute(fn), durable: Promise.resolve() });
}

// int8 and numeric come back as strings from pg by default; every bigint we store (ms epochs, nonces,
// block numbers, token ids) fits in a double, so parse them as numbers like SQLite does.
pg.types.setTypeParser(20, (v) => Number(v));

/** The SQLite database file: `sqlite:<file>` in DATABASE_URL, else DATA_DIR/mintworks.sqlite. */
export function sqliteFile(databaseUrl: string | undefined, dataDir: string): string {
  return databaseUrl?.startsWith('sqlite:') ? path.resolve(databaseUrl.slice('sqlite:'.length)) : path.join(dataDir, 'mintworks.sqlite');
}

export function openStore(opts: { databaseUrl?: string; dataDir: string }): Store {
  const url = opts.databaseUrl;
  if (url && /^postgres(ql)?:\/\//.test(url)) {
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    // An idle connection dropped by the server (restart, failover) must not crash the process; the
    // pool opens a new one on the next query.
    pool.on('error', (err) => process.emitWarning(`PostgreSQL connection lost: ${err.message}`));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect: 'postgres', describe: redactUrl(url), close: () => db.destroy(), groupCommit: plainGroupCommit(db) };
  }
  const file = sqliteFile(url, opts.dataDir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const database = new SQLite(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = FULL'); // an accepted request must survive a power cut
  // No blocking busy handler: it would stall the event loop while another process (the worker process,
  // the CLI) holds the write lock. BusyRetryConnection waits for the lock asynchronously instead.
  database.pragma('busy_timeout = 0');
  database.pragma('foreign_keys = ON');
  // Checkpoints (copying the WAL back into the database file, with two fsyncs) would run inside some
  // request's commit every 1000 pages; a thread of its own does them instead.
  database.pragma('wal_autocheckpoint = 0');
  const checkpointer = startCheckpointer(file);
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: withStatementCache(database) }, database) });
  const wal = new WalSync(`${file}-wal`);
  return {
    db,
    dialect: 'sqlite',
    describe: file,
    close: async () => {
      await checkpointer.terminate();
      await db.destroy();
      wal.close();
    },
    groupCommit: async (fn) => {
      // The connection is held throughout, so nothing else ever runs with synchronous = NORMAL.
      const result = await db.connection().execute(async (conn) => {
        await sql`pragma synchronous = NORMAL`.execute(conn);
        try {
          return await conn.transaction().execute(fn);
        } finally {
          await sql`pragma synchronous = FULL`.execute(conn);
        }
      });
      return { result, durable: wal.sync() };
    },
  };
}

/**
 * A worker thread with its own connection that checkpoints the WAL every `everyMs` (PASSIVE: it never
 * waits for or blocks the writer; frames a reader still needs are copied on a later round), and
 * truncates it after a quiet spell so it does not stay large. Eval'd source: it runs the same way from
 * `dist/` and under tsx.
 */
function startCheckpointer(file: string, everyMs = 1000): Worker {
  const code = `
    const { workerData } = require('node:worker_threads');
    const Database = require(workerData.module);
    const db = new Database(workerData.file);
    db.pragma('busy_timeout = 5000');
    let idle = 0;
    setInterval(() => {
      try {
        const [r] = db.pragma('wal_checkpoint(PASSIVE)');
        idle = r.log === 0 ? idle + 1 : 0;
        if (idle === 5) db.pragma('wal_checkpoint(TRUNCATE)');
      } catch {}
    }, workerData.everyMs);`;
  const worker = new Worker(code, { eval: true, workerData: { module: require.resolve('better-sqlite3'), file, everyMs } });
  worker.unref();
  return worker;
}

/**
 * fsync of the SQLite WAL file in the thread pool. With synchronous = NORMAL a WAL commit is written to
 * the file but not flushed; flushing the file afterwards makes it exactly as durable as a FULL commit
 * (which is that same write plus an fsync of the WAL). Any FULL commit flushes every earlier frame too,
 * so a worker that reads such a row and then commits before acting on the chain never acts on a row a
 * power cut could take back. One fsync runs at a time; callers that committed while it ran share the
 * next one.
 */
class WalSync {
  private fd: number | null = null;
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;

  constructor(private readonly file: string) {}

  sync(): Promise<void> {
    if (!this.running) {
      this.running = this.flush().finally(() => (this.running = null));
      return this.running;
    }
    // The running fsync may have started before this caller's commit: it needs the next one.
    this.queued ??= this.running.then(() => {
      this.queued = null;
      return this.sync();
    });
    return this.queued;
  }

  private async flush(): Promise<void> {
    this.fd ??= fs.openSync(this.file, 'r');
    const fd = this.fd;
    // fdatasync, as SQLite itself uses: it flushes the data and the size, not the timestamps.
    await new Promise<void>((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve())));
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}

/**
 * Kysely's SQLite driver prepares every statement anew (parsing and planning it each time). The service
 * issues the same few hundred SQL texts over and over, so prepared statements are kept by their text.
 * Bounded: texts with a variable number of `?` (IN lists, multi-row inserts) would otherwise grow it
 * without end.
 */
/** Told of every distinct SQL text a SQLite store prepares (the query-plan test lists them so). */
export const sqlObservers = new Set<(sql: string, database: SQLite.Database) => void>();

export function withStatementCache(database: SQLite.Database, max = 1000): SqliteDialectConfig['database'] {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => database.close(),
    prepare(text: string) {
      let stmt = cache.get(text);
      if (stmt) return stmt;
      for (const o of sqlObservers) o(text, database);
      stmt = database.prepare(text);
      if (cache.size >= max) cache.delete(cache.keys().next().value!); // oldest first
      cache.set(text, stmt);
      return stmt;
    },
  };
}

/**
 * Transactions take SQLite's write lock at BEGIN (BEGIN IMMEDIATE). With a plain deferred BEGIN, a
 * transaction that reads and then writes while another process (the CLI beside the service) has
 * written in between fails at once with "database is locked" instead of waiting for the lock.
 */
class ImmediateSqliteDialect extends SqliteDialect {
  constructor(
    private readonly cfg: SqliteDialectConfig,
    private readonly database: SQLite.Database,
  ) {
    super(cfg);
  }
  override createDriver() {
    const database = this.database;
    return new (class extends SqliteDriver {
      override async acquireConnection(): Promise<DatabaseConnection> {
        return new BusyRetryConnection(await super.acquireConnection(), database);
      }
      override async beginTransaction(connection: DatabaseConnection): Promise<void> {
        await connection.executeQuery(CompiledQuery.raw('begin immediate'));
      }
    })(this.cfg);
  }
}

/** How long a statement waits for another process's write lock before "database is locked". */
export const SQLITE_LOCK_WAIT_MS = 5000;

/**
 * Waits for SQLite's write lock without blocking the event loop. better-sqlite3 is synchronous, so
 * its busy handler (busy_timeout) would sleep on the event loop while another process writes; with
 * busy_timeout = 0 a statement that finds the lock taken fails at once with SQLITE_BUSY, and is retried
 * here after a short timer, while requests go on being parsed and grouped. Only statements outside a
 * transaction are retried (BEGIN IMMEDIATE itself, autocommit statements): inside one the lock is held.
 */
export class BusyRetryConnection implements DatabaseConnection {
  constructor(
    private readonly inner: DatabaseConnection,
    private readonly database: { readonly inTransaction: boolean },
    private readonly waitMs = SQLITE_LOCK_WAIT_MS,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    let delay = 0;
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      try {
        return await this.inner.executeQuery<R>(query);
      } catch (err) {
        const busy = String((err as { code?: string }).code ?? '').startsWith('SQLITE_BUSY');
        if (!busy || this.database.inTransaction || Date.now() >= deadline) throw err;
        // Short and capped: the other writer's transactions last a few ms, and a long sleep would
        // leave the lock idle while requests queue up behind this one.
        await new Promise((r) => (delay === 0 ? setImmediate(r) : setTimeout(r, delay)));
        delay = Math.min(delay + 1, 4);
      }
    }
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

/**
 * A query built once and reused with new values: building and compiling a Kysely query costs more than
 * running a simple indexed SELECT on SQLite, so the hottest reads skip it. `build` receives placeholder
 * values (one per parameter, in order) and must use each exactly where the real value goes.
 */
export function precompiled<R, N extends number>(count: N, build: (db: Db, ...placeholders: string[]) => Compilable<R>) {
  let compiled: { sql: string; slots: number[]; fixed: readonly unknown[] } | null = null;
  return async (db: DbOrTx, ...values: unknown[]): Promise<R[]> => {
    if (!compiled) {
      const marks = Array.from({ length: count }, (_, i) => `\u0000param${i}\u0000`);
      const q = build(db as Db, ...marks).compile();
      const slots = q.parameters.map((p) => marks.indexOf(p as string));
      if (marks.some((_, i) => !slots.includes(i))) throw new Error('precompiled: a placeholder is not used by the query');
      compiled = { sql: q.sql, slots, fixed: q.parameters };
    }
    const c = compiled;
    const params = c.fixed.map((p, i) => (c.slots[i] >= 0 ? values[c.slots[i]] : p));
    return (await db.executeQuery<R>(CompiledQuery.raw(c.sql, params))).rows;
  };
}

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
