// Opens the store the configuration names: PostgreSQL for a postgres:// DATABASE_URL, else SQLite (a file
// in DATA_DIR, or `sqlite:<file>`).
import type { Store } from './db.js';
import { openPostgresStore } from './postgres/open.js';
import type { PgSettings } from './postgres/connection.js';
import { openSqliteStore, type SqliteStoreOptions } from './sqlite/open.js';

/** PostgreSQL's settings beside the URL; defaults for callers that give none (tools, tests). */
export type PostgresOptions = Omit<PgSettings, 'url'>;
const POSTGRES_DEFAULTS: PostgresOptions = { poolMode: 'session', poolSize: 10, statementTimeoutMs: 0, idleInTransactionTimeoutMs: 0 };

/** `onConnectionLost` (PostgreSQL): told of a connection the server dropped, for the service's log. */
export function openStore(opts: SqliteStoreOptions & { postgres?: PostgresOptions; onConnectionLost?: (err: Error) => void }): Store {
  const url = opts.databaseUrl;
  return url && /^postgres(ql)?:\/\//.test(url)
    ? openPostgresStore({ ...POSTGRES_DEFAULTS, ...opts.postgres, url }, opts.onConnectionLost)
    : openSqliteStore(opts);
}
