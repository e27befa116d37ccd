// The PostgreSQL store: a pool whose lost connections never take the process down, named prepared
// statements for the hottest lookups (not behind a transaction pooler), timeouts per session or per
// transaction, migrations under a transaction's lock, and NOTIFY-based change notifications on a
// session of their own (none behind a transaction pooler without DATABASE_DIRECT_URL).
import pg from 'pg';
import { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../schema.js';
import { PoolStats, preparingPool } from './prepared.js';
import { PgChanges } from './changes.js';
import { clientConfig, explainTlsFailure, type PgSettings } from './connection.js';
import { BeginDialect, MigrationDialect, sessionSettings, transactionSettings } from './dialect.js';
import { plainGroupCommit, redactUrl, type Store } from '../db.js';

// int8 and numeric come back as strings from pg by default; every bigint we store (ms epochs, nonces,
// block numbers, token ids) fits in a double, so parse them as numbers like SQLite does.
pg.types.setTypeParser(20, (v) => Number(v));

/**
 * `onConnectionLost`: told of an idle connection the server dropped (the service logs it as a warning;
 * without it, a process warning).
 */
function openPool(url: string, s: PgSettings, max: number, onConnectionLost?: (err: Error) => void): pg.Pool {
  // keepAlive: a connection whose server vanished without a word (a failover, a partition) is found
  // dead by TCP instead of hanging; connectionTimeoutMillis: a server that does not answer fails the
  // request (503) instead of holding it.
  const pool = new pg.Pool({ ...clientConfig(url, s), max, keepAlive: true, connectionTimeoutMillis: 10_000 });
  // A connection dropped by the server (restart, failover, pg_terminate_backend) must not crash the
  // process. Idle ones: the pool's own handler drops them and says so here. Checked-out ones (in a
  // transaction, between two queries): the query in flight fails with the error, the client is no
  // longer queryable so the pool discards it on release and opens a new one on the next query; the
  // 'error' event the client emits as well only needs a listener.
  pool.on('error', (err) => (onConnectionLost ? onConnectionLost(err) : process.emitWarning(`PostgreSQL connection lost: ${err.message}`)));
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

export function openPostgresStore(s: PgSettings, onConnectionLost?: (err: Error) => void): Store {
  const pooled = s.poolMode === 'transaction';
  const explain = (url: string) => (err: unknown) => explainTlsFailure(err, url, s);
  const pool = openPool(s.url, s, s.poolSize, onConnectionLost);
  // Timeouts: a session's own settings on a session; behind a transaction pooler, SET LOCAL in each
  // transaction (a statement outside one has the role's or the server's).
  const session = sessionSettings(s.statementTimeoutMs, s.idleInTransactionTimeoutMs);
  if (!pooled && session) pool.on('connect', (client) => void client.query(session).catch(() => {}));
  const stats = new PoolStats(pool, s.poolSize);
  const db = new Kysely<Database>({
    dialect: new BeginDialect(
      { pool: preparingPool(pool, { named: !pooled, stats, explain: explain(s.url) }) },
      pooled ? transactionSettings(s.statementTimeoutMs, s.idleInTransactionTimeoutMs) : '',
    ),
  });
  // The migrations: on the direct connection when there is one (providers ask for it), else on the pool.
  let migrations: Kysely<Database> | null = null;
  const migrationDb = () => {
    if (migrations) return migrations;
    const own = s.directUrl ? openPool(s.directUrl, s, 1, onConnectionLost) : null;
    const migrationPool = preparingPool(own ?? pool, { named: false, explain: explain(s.directUrl ?? s.url), shared: own === null });
    migrations = new Kysely<Database>({ dialect: new MigrationDialect({ pool: migrationPool }) });
    return migrations;
  };
  // LISTEN needs a session: the direct URL's, or DATABASE_URL's unless it is a transaction pooler.
  const listenUrl = s.directUrl ?? (pooled ? null : s.url);
  const listen = (log: Logger, opts: ConstructorParameters<typeof PgChanges>[2]) => (listenUrl ? new PgChanges(clientConfig(listenUrl, s), log, opts) : null);
  return {
    db,
    dialect: 'postgres',
    describe: redactUrl(s.url),
    close: async () => {
      await migrations?.destroy();
      await db.destroy();
      // Kysely ends a pool only once it has run a query through it: a store that only migrated (the
      // migrations share this pool) left its connection open, holding the process up to its idle timeout.
      if (!pool.ending) await pool.end();
    },
    groupCommit: plainGroupCommit(db),
    flush: async () => {},
    flushNow: () => {},
    captureChanges: () => {},
    changeFeed: (log) => listen(log, {}),
    wakeups: (log, onWake) => listen(log, { changes: false, onWake }),
    migrationDb,
    poolStats: () => stats.snapshot(),
  };
}
