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
import { pgStoreWithTableFor } from '../helpers/migrated-store.js';

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

describe('PostgreSQL behind a transaction pooler (DATABASE_POOL_MODE=transaction)', () => {
  const pg = pgStoreWithTableFor({ poolMode: 'transaction', poolSize: 1, statementTimeoutMs: 4321, idleInTransactionTimeoutMs: 8765 }, 20);

  const aOf = precompiled(
    1,
    (db, id) =>
      db
        .selectFrom('t' as any)
        .select('a' as any)
        .where('id' as any, '=', id) as any,
  );

  it('nothing is prepared by name: the next transaction may run on another server session', async () => {
    const prepared = await pg.store.db.connection().execute(async (db) => {
      for (const id of [1, 2, 3]) assert.deepEqual(await aOf(db as any, id), [{ a: `v${id}` }]);
      return (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db)).rows;
    });
    assert.deepEqual(prepared, []);
  });

  it("the timeouts are the transaction's own (SET LOCAL), nothing is left on the session", async () => {
    const inside = await pg.store.db.transaction().execute(async (tx) => {
      const r = await sql<{
        s: string;
        i: string;
      }>`select current_setting('statement_timeout') as s, current_setting('idle_in_transaction_session_timeout') as i`.execute(tx);
      return r.rows[0];
    });
    assert.deepEqual(inside, { s: '4321ms', i: '8765ms' });
    const outside = (await sql<{ s: string }>`select current_setting('statement_timeout') as s`.execute(pg.store.db)).rows[0].s;
    assert.equal(outside, '0', 'the one session of the pool kept no setting');
  });

  it('the pool counts the waits for a connection (/health, /metrics)', async () => {
    const before = pg.store.poolStats!().waits;
    await Promise.all([1, 2, 3].map((id) => aOf(pg.store.db, id)));
    const s = pg.store.poolStats!();
    assert.equal(s.max, 1);
    assert.ok(s.waits >= before + 2, `${s.waits} waits`);
  });
});
