// One kysely database over SQLite (default, a file in DATA_DIR, WAL) or PostgreSQL (DATABASE_URL).
// The schema and migrations are shared; the few dialect differences are named here.
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { CompiledQuery, Kysely, PostgresDialect, SqliteDialect, SqliteDriver, sql, type DatabaseConnection, type SqliteDialectConfig, type Transaction } from 'kysely';
import type { Database } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';
export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
export type DbOrTx = Db | Tx;

export interface Store {
  db: Db;
  dialect: Dialect;
  describe: string;
  close(): Promise<void>;
}

// int8 and numeric come back as strings from pg by default; every bigint we store (ms epochs, nonces,
// block numbers, token ids) fits in a double, so parse them as numbers like SQLite does.
pg.types.setTypeParser(20, (v) => Number(v));

export function openStore(opts: { databaseUrl?: string; dataDir: string }): Store {
  const url = opts.databaseUrl;
  if (url && /^postgres(ql)?:\/\//.test(url)) {
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    // An idle connection dropped by the server (restart, failover) must not crash the process; the
    // pool opens a new one on the next query.
    pool.on('error', (err) => process.emitWarning(`PostgreSQL connection lost: ${err.message}`));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect: 'postgres', describe: redactUrl(url), close: () => db.destroy() };
  }
  const file = url?.startsWith('sqlite:') ? path.resolve(url.slice('sqlite:'.length)) : path.join(opts.dataDir, 'mintworks.sqlite');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const database = new SQLite(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = FULL'); // an accepted request must survive a power cut
  database.pragma('busy_timeout = 5000');
  database.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database }) });
  return { db, dialect: 'sqlite', describe: file, close: () => db.destroy() };
}

/**
 * Transactions take SQLite's write lock at BEGIN (BEGIN IMMEDIATE). With a plain deferred BEGIN, a
 * transaction that reads and then writes while another process (the CLI beside the service) has
 * written in between fails at once with "database is locked" instead of waiting busy_timeout.
 */
class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly cfg: SqliteDialectConfig) {
    super(cfg);
  }
  override createDriver() {
    return new (class extends SqliteDriver {
      override async beginTransaction(connection: DatabaseConnection): Promise<void> {
        await connection.executeQuery(CompiledQuery.raw('begin immediate'));
      }
    })(this.cfg);
  }
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
