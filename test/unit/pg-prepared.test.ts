// Named prepared statements on PostgreSQL (src/store/pg-prepared.ts), against a real server: what the
// connection has prepared is read from pg_prepared_statements on that same connection.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { openStore, type Store } from '../../src/store/db.js';
import { freshPostgres, tempDir } from '../helpers/env.js';

describe('PostgreSQL: named prepared statements', () => {
  let pgdb: { url: string; drop(): Promise<void> };
  let store: Store;
  before(async () => {
    pgdb = await freshPostgres();
    store = openStore({ databaseUrl: pgdb.url, dataDir: tempDir() });
    await sql`create table t (id int primary key, a text)`.execute(store.db);
    await sql`insert into t select i, 'v' || i from generate_series(1, 200) i`.execute(store.db);
  });
  after(async () => {
    await store.close();
    await pgdb.drop();
  });

  /** Runs `fn` on one connection and returns the statements that connection has prepared, by text. */
  const onOneConnection = (fn: (db: Store['db']) => Promise<void>) =>
    store.db.connection().execute(async (db) => {
      await fn(db as unknown as Store['db']);
      const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db);
      return rows.map((r) => r.statement);
    });

  it('a query with parameters is prepared once per connection and answers as before', async () => {
    const prepared = await onOneConnection(async (db) => {
      for (const id of [1, 2, 3]) {
        const rows = await db.selectFrom('t' as any).select('a' as any).where('id' as any, '=', id).execute();
        assert.deepEqual(rows, [{ a: `v${id}` }]);
      }
    });
    assert.equal(prepared.filter((s) => /from "t" where "id" = \$1/.test(s)).length, 1);
  });

  it('queries without parameters, and batches with many, stay unnamed', async () => {
    const ids = Array.from({ length: 100 }, (_, i) => i + 1);
    const prepared = await onOneConnection(async (db) => {
      await sql`select count(*) from t`.execute(db);
      const rows = await db.selectFrom('t' as any).select('id' as any).where('id' as any, 'in', ids).execute();
      assert.equal(rows.length, 100);
    });
    assert.ok(!prepared.some((s) => s.includes('count(*)') || s.includes('$100')), prepared.join('\n'));
  });

  it('a table changed under a prepared `select *` answers with its new columns', async () => {
    const byId = (db: Store['db']) => db.selectFrom('t' as any).selectAll().where('id' as any, '=', 7).execute();
    await store.db.connection().execute(async (db) => {
      assert.deepEqual(await byId(db as any), [{ id: 7, a: 'v7' }]);
      await sql`alter table t add column b text default 'x'`.execute(db);
      assert.deepEqual(await byId(db as any), [{ id: 7, a: 'v7', b: 'x' }]);
      assert.deepEqual(await byId(db as any), [{ id: 7, a: 'v7', b: 'x' }]);
    });
  });
});
