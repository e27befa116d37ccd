// Opens the store the configuration names: PostgreSQL for a postgres:// DATABASE_URL, else SQLite (a file
// in DATA_DIR, or `sqlite:<file>`).
import type { Store } from './db.js';
import { openPostgresStore } from './postgres/open.js';
import { openSqliteStore, type SqliteStoreOptions } from './sqlite/open.js';

export function openStore(opts: SqliteStoreOptions & { onConnectionLost?: (err: Error) => void }): Store {
  const url = opts.databaseUrl;
  return url && /^postgres(ql)?:\/\//.test(url) ? openPostgresStore(url, opts.onConnectionLost) : openSqliteStore(opts);
}
