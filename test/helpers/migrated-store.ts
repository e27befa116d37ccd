// A describe block's own migrated store on a new database (SQLite in a temporary directory, or a fresh
// PostgreSQL database), opened before its tests and closed (the database dropped) after them.
import { after, before } from 'node:test';
import type { Db, Store } from '../../src/store/db.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { openStore } from '../../src/store/open.js';
import { freshPostgres, tempDir } from './env.js';

/** Registers the block's before and after; `db` is usable inside its tests. */
export function migratedStoreFor(kind: 'sqlite' | 'postgres'): { readonly db: Db } {
  let store: Store | undefined;
  let drop = async () => {};
  before(async () => {
    const pgdb = kind === 'postgres' ? await freshPostgres() : null;
    if (pgdb) drop = pgdb.drop;
    store = openStore({ databaseUrl: pgdb?.url, dataDir: tempDir() });
    await migrateToLatest(store);
  });
  after(async () => {
    await store?.close();
    await drop();
  });
  return {
    get db() {
      if (!store) throw new Error('the store is opened before the tests of its block');
      return store.db;
    },
  };
}
