// Named prepared statements on PostgreSQL (src/store/postgres/prepared.ts), against a real server: what the
// connection has prepared is read from pg_prepared_statements on that same connection. Precompiled
// lookups are named; every other query stays unnamed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Store } from '../../src/store/db.js';
import { openStore } from '../../src/store/open.js';
import { precompiled } from '../../src/store/precompiled.js';
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

  const aOf = precompiled(
    1,
    (db, id) =>
      db
        .selectFrom('t' as any)
        .select('a' as any)
        .where('id' as any, '=', id) as any,
  );

  it('a precompiled lookup is prepared once per connection and answers as before', async () => {
    const prepared = await onOneConnection(async (db) => {
      for (const id of [1, 2, 3]) assert.deepEqual(await aOf(db, id), [{ a: `v${id}` }]);
    });
    assert.equal(prepared.filter((s) => /from "t" where "id" = \$1/.test(s)).length, 1);
  });

  it('other queries stay unnamed, with or without parameters', async () => {
    const prepared = await onOneConnection(async (db) => {
      await sql`select count(*) from t`.execute(db);
      const rows = await db
        .selectFrom('t' as any)
        .select('id' as any)
        .where('id' as any, 'in', [4, 5])
        .execute();
      assert.equal(rows.length, 2);
    });
    assert.ok(!prepared.some((s) => s.includes('count(*)') || s.includes('in ($1, $2)')), prepared.join('\n'));
  });

  it('a table changed under a prepared `select *` answers with its new columns', async () => {
    const all = precompiled(
      1,
      (db, id) =>
        db
          .selectFrom('t' as any)
          .selectAll()
          .where('id' as any, '=', id) as any,
    );
    const byId = (db: Store['db']) => all(db, 7);
    await store.db.connection().execute(async (db) => {
      assert.deepEqual(await byId(db as any), [{ id: 7, a: 'v7' }]);
      await sql`alter table t add column b text default 'x'`.execute(db);
      assert.deepEqual(await byId(db as any), [{ id: 7, a: 'v7', b: 'x' }]);
      assert.deepEqual(await byId(db as any), [{ id: 7, a: 'v7', b: 'x' }]);
    });
  });
});
