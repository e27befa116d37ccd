// The PostgreSQL store: a pool whose lost connections never take the process down, named prepared
// statements for the hottest lookups, and NOTIFY-based change notifications.
import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import type { Database } from '../schema.js';
import { preparingPool } from './prepared.js';
import { PgChanges } from './changes.js';
import { plainGroupCommit, redactUrl, type Store } from '../db.js';

// int8 and numeric come back as strings from pg by default; every bigint we store (ms epochs, nonces,
// block numbers, token ids) fits in a double, so parse them as numbers like SQLite does.
pg.types.setTypeParser(20, (v) => Number(v));

/**
 * `onConnectionLost`: told of an idle connection the server dropped (the service logs it as a warning;
 * without it, a process warning).
 */
export function openPostgresStore(url: string, onConnectionLost?: (err: Error) => void): Store {
  // keepAlive: a connection whose server vanished without a word (a failover, a partition) is found
  // dead by TCP instead of hanging; connectionTimeoutMillis: a server that does not answer fails the
  // request (503) instead of holding it.
  const pool = new pg.Pool({ connectionString: url, max: 10, keepAlive: true, connectionTimeoutMillis: 10_000 });
  // A connection dropped by the server (restart, failover, pg_terminate_backend) must not crash the
  // process. Idle ones: the pool's own handler drops them and says so here. Checked-out ones (in a
  // transaction, between two queries): the query in flight fails with the error, the client is no
  // longer queryable so the pool discards it on release and opens a new one on the next query; the
  // 'error' event the client emits as well only needs a listener.
  pool.on('error', (err) => (onConnectionLost ? onConnectionLost(err) : process.emitWarning(`PostgreSQL connection lost: ${err.message}`)));
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) });
  return {
    db,
    dialect: 'postgres',
    describe: redactUrl(url),
    close: () => db.destroy(),
    groupCommit: plainGroupCommit(db),
    flush: async () => {},
    captureChanges: () => {},
    changeFeed: (log) => new PgChanges(url, log),
  };
}
