// A describe block's own migrated store on a new database (SQLite in a temporary directory, or a fresh
// PostgreSQL database; each a copy of a schema migrated once per process, see schema-copies.ts), opened
// before its tests and closed (the database dropped) after them; and a PostgreSQL store of one plain
// table for the tests of the store's own layer.
import { after, before } from 'node:test';
import { sql } from 'kysely';
import type { Db, Store } from '../../src/store/db.js';
import { openStore, type PostgresOptions } from '../../src/store/open.js';
import { freshPostgres, tempDir } from './env.js';
import { migratedPostgres, migratedSqliteDir } from './schema-copies.js';

/** Registers the block's before and after; `db` is usable inside its tests. */
export function migratedStoreFor(kind: 'sqlite' | 'postgres'): { readonly db: Db } {
  const block = storeOfBlock(kind, async () => {}, undefined, true);
  return {
    get db() {
      return block.store.db;
    },
  };
}

/**
 * A describe block's own PostgreSQL store (`postgres`: its settings) on a new database holding one table,
 * `t (id int primary key, a text)`, with rows 1..`rows` (`a` = 'v' || id).
 */
export function pgStoreWithTableFor(postgres: PostgresOptions, rows = 0): { readonly store: Store } {
  return storeOfBlock(
    'postgres',
    async (store) => {
      await sql`create table t (id int primary key, a text)`.execute(store.db);
      if (rows) await sql`insert into t select i, 'v' || i from generate_series(1, ${rows}::int) i`.execute(store.db);
    },
    postgres,
  );
}

/**
 * A store opened before the block's tests (SQLite in a temporary directory, or a fresh PostgreSQL
 * database with the settings `postgres`; `migrated`: each a copy of the latest schema) and made ready by
 * `prepare`; closed, and its database dropped, after them.
 */
function storeOfBlock(
  kind: 'sqlite' | 'postgres',
  prepare: (store: Store) => Promise<void>,
  postgres?: PostgresOptions,
  migrated = false,
): { readonly store: Store } {
  let store: Store | undefined;
  let drop = async () => {};
  before(async () => {
    const pgdb = kind === 'postgres' ? await (migrated ? migratedPostgres() : freshPostgres()) : null;
    if (pgdb) drop = pgdb.drop;
    store = openStore({ databaseUrl: pgdb?.url, dataDir: migrated && !pgdb ? await migratedSqliteDir() : tempDir(), postgres });
    await prepare(store);
  });
  after(async () => {
    await store?.close();
    await drop();
  });
  return {
    get store() {
      if (!store) throw new Error('the store is opened before the tests of its block');
      return store;
    },
  };
}
