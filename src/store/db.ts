// One kysely database over SQLite (default, a file in DATA_DIR, WAL) or PostgreSQL (DATABASE_URL).
// The schema and migrations are shared; the few dialect differences are named here.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { CompiledQuery, Kysely, type Compilable, type Insertable, PostgresAdapter, PostgresDialect, SqliteDialect, SqliteDriver, SqliteQueryCompiler, sql, type DatabaseConnection, type QueryResult, type SelectQueryNode, type SqliteDialectConfig, type Transaction } from 'kysely';
import type { Database } from './schema.js';
import { prepareByName, preparingPool } from './pg-prepared.js';
import { SqliteChanges } from './sqlite-changes.js';
import { goesFirst, writeTurns, type WriteTurns } from './write-turns.js';
import { PgChanges } from './pg-changes.js';
import { fromDatabase } from './unavailable.js';
import { rowVersions, type ChangeFeed } from './row-versions.js';
import type { Logger } from 'pino';

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
  /**
   * Makes every commit so far durable, whichever connection of the process made it (on SQLite one
   * flush of the WAL file covers them all; on PostgreSQL a commit already is). What a store opened
   * with `flushedBy: 'caller'` relies on.
   */
  flush(): Promise<void>;
  /**
   * From now on, changes of the rows cached reads depend on bump the process's row counters
   * (store/row-versions.ts). Called once the migrations are applied. On PostgreSQL the migrations' own
   * triggers announce them instead (store/pg-changes.ts).
   */
  captureChanges(): void;
  /**
   * How cached reads know every change committed so far is counted (store/row-versions.ts).
   * `othersWrite`: other processes write too (SQLite with the workers in a process of their own).
   */
  changeFeed(log: Logger, opts: { othersWrite: boolean }): ChangeFeed;
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

/**
 * Who checkpoints a SQLite WAL (copies it back into the database file): a thread of the store's own
 * (`thread`, the default), a timer on this thread's event loop with a connection of its own (`inline`:
 * for the workers' thread, which the API does not wait on), or someone else (`none`: the process's
 * workers' thread does it, or a short-lived CLI). Each thread costs an isolate (~17 MB).
 */
export type Checkpoints = 'thread' | 'inline' | 'none';

/**
 * `flushedBy: 'caller'` (SQLite): commits are not flushed to disk here; whoever acts on them calls
 * `flush()` first, of this store or another on the same file. For a thread that only writes and hands
 * its results to another (the creates' thread: the main thread flushes before it answers): a flush
 * done here would be seen only when this thread's event loop comes round, after its next group.
 */
export function openStore(opts: { databaseUrl?: string; dataDir: string; checkpoints?: Checkpoints; flushedBy?: 'commit' | 'caller' }): Store {
  const url = opts.databaseUrl;
  if (url && /^postgres(ql)?:\/\//.test(url)) {
    // keepAlive: a connection whose server vanished without a word (a failover, a partition) is found
    // dead by TCP instead of hanging; connectionTimeoutMillis: a server that does not answer fails the
    // request (503) instead of holding it.
    const pool = new pg.Pool({ connectionString: url, max: 10, keepAlive: true, connectionTimeoutMillis: 10_000 });
    // A connection dropped by the server (restart, failover, pg_terminate_backend) must not crash the
    // process. Idle ones: the pool's own handler drops them and says so here. Checked-out ones (in a
    // transaction, between two queries): the query in flight fails with the error, the client is no
    // longer queryable so the pool discards it on release and opens a new one on the next query; the
    // 'error' event the client emits as well only needs a listener.
    pool.on('error', (err) => process.emitWarning(`PostgreSQL connection lost: ${err.message}`));
    pool.on('connect', (client) => client.on('error', () => {}));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) });
    return { db, dialect: 'postgres', describe: redactUrl(url), close: () => db.destroy(), groupCommit: plainGroupCommit(db), flush: async () => {}, captureChanges: () => {}, changeFeed: (log) => new PgChanges(url, log) };
  }
  const file = sqliteFile(url, opts.dataDir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const database = new SQLite(file);
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
  // Checkpoints (copying the WAL back into the database file, with two fsyncs) would run inside some
  // request's commit every 1000 pages; a checkpointer of their own does them instead (startCheckpointer).
  database.pragma('wal_autocheckpoint = 0');
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
    captureChanges: () => changes.install(),
    changeFeed: (_log, { othersWrite }) => sqliteChangeFeed(database, othersWrite),
    close: async () => {
      await checkpointer.stop();
      await db.destroy();
      wal.close();
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

/**
 * Checkpoints the WAL every `everyMs` on a connection of its own (PASSIVE: it never waits for or blocks
 * the writer; frames a reader still needs are copied on a later round), and truncates it after a quiet
 * spell so it does not stay large. In a thread: eval'd source, so it runs the same way from `dist/` and
 * under tsx.
 */
function startCheckpointer(file: string, where: Checkpoints, everyMs = 1000): { stop(): Promise<void> } {
  if (where === 'none') return { stop: async () => {} };
  if (where === 'inline') {
    const db = new SQLite(file);
    db.pragma('busy_timeout = 0'); // never sleep on this event loop; a busy round is retried next time
    const round = checkpointRound(db);
    const timer = setInterval(round, everyMs);
    timer.unref();
    return {
      stop: async () => {
        clearInterval(timer);
        db.close();
      },
    };
  }
  const code = `
    const { workerData } = require('node:worker_threads');
    const Database = require(workerData.module);
    const db = new Database(workerData.file);
    db.pragma('busy_timeout = 5000');
    const round = (${checkpointRound.toString()})(db);
    setInterval(round, workerData.everyMs);`;
  const worker = new Worker(code, { eval: true, workerData: { module: require.resolve('better-sqlite3'), file, everyMs } });
  worker.unref();
  return { stop: async () => void (await worker.terminate()) };
}

/** One checkpoint round on `db` (plain JavaScript: it is also eval'd in the checkpointer thread). */
function checkpointRound(db: { pragma(s: string): unknown }): () => void {
  let idle = 0;
  return () => {
    try {
      const [r] = db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
      idle = r.log === 0 ? idle + 1 : 0;
      if (idle === 5) db.pragma('wal_checkpoint(TRUNCATE)');
    } catch {
      /* busy: the next round copies what this one could not */
    }
  };
}

/**
 * fsync of the SQLite WAL file in the thread pool. With synchronous = NORMAL a WAL commit is written to
 * the file but not flushed; flushing the file afterwards makes it exactly as durable as a FULL commit
 * (which is that same write plus an fsync of the WAL). The WAL is one file written in order, so every
 * flush also covers every earlier commit of any connection: a worker that reads a row and then commits
 * before acting on the chain never acts on a row a power cut could take back. One fsync runs at a time;
 * callers that committed while it ran share the next one.
 */
class WalSync {
  private fd: number | null = null;
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;

  /** `byCaller`: commits do not flush (`sync`); the store's users do (`flush`). */
  constructor(
    private readonly file: string,
    private readonly byCaller = false,
  ) {}

  /** After a commit. */
  sync(): Promise<void> {
    return this.byCaller ? Promise.resolve() : this.flushAll();
  }

  /** Every commit so far (of any connection to the file) on disk. */
  flushAll(): Promise<void> {
    if (!this.running) {
      this.running = this.flush().finally(() => (this.running = null));
      return this.running;
    }
    // The running fsync may have started before this caller's commit: it needs the next one.
    this.queued ??= this.running.then(() => {
      this.queued = null;
      return this.flushAll();
    });
    return this.queued;
  }

  private async flush(): Promise<void> {
    this.fd ??= fs.openSync(this.file, 'r');
    const fd = this.fd;
    // fdatasync, as SQLite itself uses: it flushes the data and the size, not the timestamps.
    await new Promise<void>((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(fromDatabase(err)) : resolve())));
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}

/**
 * Kysely's SQLite driver prepares every statement anew (parsing and planning it each time). The service
 * issues the same few hundred SQL texts over and over, so prepared statements are kept by their text.
 * Texts with a variable number of `?` (IN lists, multi-row inserts) come in as many versions as there
 * are list lengths, and a prepared statement's memory grows with its text (a 400-row insert holds
 * about a MB): long texts get a small cache of their own, so they cannot fill memory, while the short
 * ones that make up most of the traffic stay prepared.
 */
/** Told of every distinct SQL text a SQLite store prepares (the query-plan test lists them so). */
export const sqlObservers = new Set<(sql: string, database: SQLite.Database) => void>();

/** SQL texts longer than this are "long" (tens of placeholders or more). */
const LONG_SQL = 2048;

export function withStatementCache(database: SQLite.Database, max = 1000, maxLong = 16): CachedStatements {
  const short = new Map<string, SQLite.Statement>();
  const long = new Map<string, SQLite.Statement>();
  return {
    close: () => database.close(),
    prepare(text: string) {
      const cache = text.length > LONG_SQL ? long : short;
      let stmt = cache.get(text);
      if (stmt) {
        if (cache === long) {
          cache.delete(text); // most recently used last
          cache.set(text, stmt);
        }
        return stmt;
      }
      for (const o of sqlObservers) o(text, database);
      stmt = withPlainRows(database.prepare(text));
      if (cache.size >= (cache === long ? maxLong : max)) cache.delete(cache.keys().next().value!); // oldest first
      cache.set(text, stmt);
      return stmt;
    },
  };
}

/**
 * A statement that returns rows builds them from arrays (`raw` mode) with an object literal compiled
 * for its columns: better-sqlite3 builds each row object key by key, which costs about as much as the
 * indexed lookup itself for a row of thirty columns. The rows are the same plain objects (a later
 * column of the same name wins, as before). Only what Kysely's driver calls is overridden.
 */
function withPlainRows(stmt: SQLite.Statement): SQLite.Statement {
  if (!stmt.reader) return stmt;
  // The keys are the statement's own column names, quoted by JSON.stringify.
  const compile = () => {
    const names = stmt.columns().map((c) => c.name);
    return { width: names.length, row: new Function('r', `return {${names.map((n, i) => `${JSON.stringify(n)}: r[${i}]`).join(', ')}};`) as (r: unknown[]) => unknown };
  };
  let shape = compile();
  stmt.raw(true);
  const rows = (arrays: unknown[][]) => {
    // SQLite prepares a statement again after a schema change: a `*` may have gained or lost columns.
    if (arrays.length > 0 && arrays[0].length !== shape.width) shape = compile();
    const out = new Array(arrays.length);
    for (let i = 0; i < arrays.length; i++) out[i] = shape.row(arrays[i]);
    return out;
  };
  const all = stmt.all.bind(stmt) as (...p: unknown[]) => unknown[][];
  const iterate = stmt.iterate.bind(stmt) as (...p: unknown[]) => IterableIterator<unknown[]>;
  return Object.assign(stmt, {
    all: (...params: unknown[]) => rows(all(...params)),
    *iterate(...params: unknown[]) {
      for (const r of iterate(...params)) yield rows([r])[0];
    },
  }) as SQLite.Statement;
}

/** The statement cache the driver prepares through; its statements also say whether a SQL text writes (`readonly`). */
export interface CachedStatements {
  prepare(text: string): SQLite.Statement;
  close(): void;
}

/**
 * Transactions take SQLite's write lock at BEGIN (BEGIN IMMEDIATE). With a plain deferred BEGIN, a
 * transaction that reads and then writes while another process (the CLI beside the service) has
 * written in between fails at once with "database is locked" instead of waiting for the lock.
 * Every commit, and every write outside a transaction, is followed by a flush of the WAL (WalSync)
 * before it returns: see `synchronous = NORMAL` above.
 */
class DurableSqliteDialect extends SqliteDialect {
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
    return new BusyRetryConnection(await super.acquireConnection(), this.database, SQLITE_LOCK_WAIT_MS, { writes, sync: () => this.wal.sync(), settled: () => this.changes.settle() }, { shared: writeTurns(), main: goesFirst() });
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
    const deadline = Date.now() + this.waitMs;
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
          if (!busy || this.database.inTransaction || Date.now() >= deadline) throw err;
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

/**
 * A query built once and reused with new values: building and compiling a Kysely query costs more than
 * running a simple indexed SELECT on SQLite, so the hottest reads skip it. `build` receives placeholder
 * values (one per parameter, in order) and must use each exactly where the real value goes. On
 * PostgreSQL it runs as a named prepared statement (store/pg-prepared.ts), so it must be a lookup by a
 * unique key: its plan is then the same whatever the values and the tables' sizes.
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
      prepareByName(q.sql);
    }
    const c = compiled;
    const params = c.fixed.map((p, i) => (c.slots[i] >= 0 ? values[c.slots[i]] : p));
    return (await db.executeQuery<R>(CompiledQuery.raw(c.sql, params))).rows;
  };
}

/**
 * Insert texts kept per database: SQLite's by table, columns and row count (the common group sizes),
 * PostgreSQL's by tables and columns.
 */
const INSERT_TEXTS_KEPT = 128;
/** By the database's dialect (its adapter, shared by its transactions): each has its own SQL text. */
const insertTexts = new WeakMap<object, Map<string, string>>();

/**
 * Inserts `rows` with one statement. Every row names the same columns in the same order (a value left
 * undefined is stored as NULL). Built through Kysely, a multi-row insert turns each value of each row
 * into a node and the nodes into text, every time: for the creates (their assets and mint jobs) that
 * was about a sixth of the API thread's CPU per request. Here the text is made once and only the
 * values change:
 * - SQLite: `values (?, …), (?, …)`, compiled once per table, columns and number of rows (checked to
 *   take its parameters row by row, column by column).
 * - PostgreSQL: `select * from unnest($1::type[], …)`, one array per column, so one text per table and
 *   columns whatever the number of rows. It runs as a named prepared statement: the server no longer
 *   parses and plans a statement of hundreds of parameters for each group (about a seventh of its CPU
 *   per create), and a text per group size would have kept a plan per size on every connection.
 */
export async function insertRows<T extends keyof Database & string>(db: DbOrTx, table: T, rows: readonly Insertable<Database[T]>[]): Promise<void> {
  if (rows.length === 0) return;
  if (onPostgres(db)) return insertParts(db, [{ table, rows }]);
  const adapter = db.getExecutor().adapter;
  const columns = Object.keys(rows[0]);
  const key = `${table}\n${columns.join(',')}\n${rows.length}`;
  let texts = insertTexts.get(adapter);
  if (!texts) insertTexts.set(adapter, (texts = new Map()));
  let text = texts.get(key);
  if (text === undefined) {
    text = valuesInsertText(db, table, columns, rows.length);
    if (texts.size >= INSERT_TEXTS_KEPT) texts.delete(texts.keys().next().value!);
    texts.set(key, text);
  }
  const params: unknown[] = [];
  for (const row of rows as readonly Record<string, unknown>[]) {
    checkSameColumns(table, columns, row);
    for (let c = 0; c < columns.length; c++) params.push(row[columns[c]] ?? null);
  }
  await db.executeQuery(CompiledQuery.raw(text, params));
}

function checkSameColumns(table: string, columns: string[], row: Record<string, unknown>): void {
  if (Object.keys(row).length !== columns.length || columns.some((c) => !(c in row))) throw new Error(`insertRows: every row into ${table} must name the same columns`);
}

/**
 * Whether each query is a round trip to a database server (PostgreSQL), so that reads worth a
 * statement of their own together are worth sending as one (SQLite runs in this process: a query
 * costs microseconds, and a plain one per table plans best).
 */
export function queriesAreRoundTrips(db: DbOrTx): boolean {
  return onPostgres(db);
}

/** Kysely's adapter (marked internal, stable) says which database `db` is: one per database, not per transaction. */
function onPostgres(db: DbOrTx): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** Rows for one table, as `insertRows` takes them. */
export interface InsertPart<T extends keyof Database & string = keyof Database & string> {
  table: T;
  rows: readonly Insertable<Database[T]>[];
}

/**
 * Inserts into several tables, as `insertRows` would one after the other (all or nothing in the
 * caller's transaction). On PostgreSQL in one statement (each part but the last a data-modifying
 * `with`), so one round trip instead of one per table: a create group's assets and mint jobs.
 */
export async function insertRowsTogether(db: DbOrTx, parts: readonly InsertPart[]): Promise<void> {
  const filled = parts.filter((p) => p.rows.length > 0);
  if (onPostgres(db)) {
    if (filled.length) await insertParts(db, filled);
    return;
  }
  for (const p of filled) await insertRows(db, p.table, p.rows);
}

/** PostgreSQL: the parts (each with rows) as one named statement of `unnest` inserts, one array per column. */
async function insertParts(db: DbOrTx, parts: readonly InsertPart[]): Promise<void> {
  const adapter = db.getExecutor().adapter;
  const shapes = parts.map((p) => ({ table: p.table, columns: Object.keys(p.rows[0]) }));
  const key = shapes.map((x) => `${x.table}\n${x.columns.join(',')}`).join('\n\n');
  let texts = insertTexts.get(adapter);
  if (!texts) insertTexts.set(adapter, (texts = new Map()));
  let text = texts.get(key);
  if (text === undefined) {
    const inserts: string[] = [];
    let first = 1;
    for (const x of shapes) {
      inserts.push(await unnestInsertText(db, x.table, x.columns, first));
      first += x.columns.length;
    }
    const last = inserts.pop()!;
    text = inserts.length ? `with ${inserts.map((t, i) => `part${i} as (${t})`).join(', ')} ${last}` : last;
    prepareByName(text);
    if (texts.size >= INSERT_TEXTS_KEPT) texts.delete(texts.keys().next().value!);
    texts.set(key, text);
  }
  const params: unknown[][] = [];
  for (const [i, part] of parts.entries()) {
    const columns = shapes[i].columns;
    const arrays = columns.map(() => [] as unknown[]);
    for (const row of part.rows as readonly Record<string, unknown>[]) {
      checkSameColumns(part.table, columns, row);
      for (let c = 0; c < columns.length; c++) arrays[c].push(row[columns[c]] ?? null);
    }
    params.push(...arrays);
  }
  await db.executeQuery(CompiledQuery.raw(text, params));
}

function valuesInsertText(db: DbOrTx, table: keyof Database & string, columns: string[], count: number): string {
  let n = 0;
  const marks = Array.from({ length: count }, () => Object.fromEntries(columns.map((c) => [c, `\u0000${n++}\u0000`])));
  const q = db.insertInto(table).values(marks as never).compile();
  if (q.parameters.length !== n || q.parameters.some((p, i) => p !== `\u0000${i}\u0000`)) throw new Error(`insertRows: the insert into ${table} does not take its values row by row`);
  return q.sql;
}

/** `insert … select * from unnest(…)` of `columns`, its array parameters numbered from `first`. */
async function unnestInsertText(db: DbOrTx, table: string, columns: string[], first: number): Promise<string> {
  // Each column's type, as the array parameter's (`unnest` cannot infer it from an untyped parameter).
  const { rows } = await sql<{ name: string; type: string }>`select attname as name, format_type(atttypid, atttypmod) as type from pg_attribute where attrelid = ${table}::regclass and attnum > 0 and not attisdropped`.execute(db);
  const typeOf = new Map(rows.map((r) => [r.name, r.type]));
  const arrays = columns.map((c, i) => {
    const type = typeOf.get(c);
    if (!type) throw new Error(`insertRows: ${table} has no column ${c}`);
    return `$${first + i}::${type}[]`;
  });
  return `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) select * from unnest(${arrays.join(', ')})`;
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
