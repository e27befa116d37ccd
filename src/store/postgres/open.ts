// The PostgreSQL store: a pool whose lost connections never take the process down, named prepared
// statements for the hottest lookups, and NOTIFY-based change notifications.
import pg from 'pg';
import { Kysely, PostgresDialect, } from 'kysely';
import type { Database } from '../schema.js';
import { preparingPool } from './prepared.js';
import { PgChanges } from './changes.js';
import { plainGroupCommit, redactUrl, type Store, } from '../db.js';

// int8 and numeric come back as strings from pg by default; every bigint we store (ms epochs, nonces,
// block numbers, token ids) fits in a double, so parse them as numbers like SQLite does.
pg.types.setTypeParser(20, (v) => Number(v));

export function openPostgresStore(url: string): Store {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  // An idle connection dropped by the server (restart, failover) must not crash the process; the
  // pool opens a new one on the next query.
  pool.on('error', (err) => process.emitWarning(`PostgreSQL connection lost: ${err.message}`));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) });
  return { db, dialect: 'postgres', describe: redactUrl(url), close: () => db.destroy(), groupCommit: plainGroupCommit(db), flush: async () => {}, captureChanges: () => {}, changeFeed: (log) => new PgChanges(url, log) };
}
