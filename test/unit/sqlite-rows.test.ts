// SQLite rows are built from arrays by a compiled object literal (src/store/sqlite/statements.ts): they must be the same
// objects better-sqlite3 would build, for every way Kysely reads them.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Store } from '../../src/store/db.js';
import { openStore } from '../../src/store/open.js';
import { tempDir } from '../helpers/env.js';

describe('SQLite rows', () => {
  let store: Store;
  before(async () => {
    store = openStore({ dataDir: tempDir(), checkpoints: 'none' });
    await sql`create table t (id integer primary key, a text, "odd ""name""" text, n real)`.execute(store.db);
    await sql`insert into t values (1, 'x', 'q', 1.5), (2, null, 'r', null)`.execute(store.db);
  });
  after(() => store.close());

  it('come back as plain objects keyed by column, in column order', async () => {
    const rows = await store.db
      .selectFrom('t' as any)
      .selectAll()
      .orderBy('id' as any)
      .execute();
    assert.deepEqual(rows, [
      { id: 1, a: 'x', 'odd "name"': 'q', n: 1.5 },
      { id: 2, a: null, 'odd "name"': 'r', n: null },
    ]);
    assert.deepEqual(Object.keys(rows[0]), ['id', 'a', 'odd "name"', 'n']);
    assert.equal(Object.getPrototypeOf(rows[0]), Object.prototype);
  });

  it('a later column of the same name wins, as in better-sqlite3', async () => {
    const { rows } = await sql`select id, a as v, 'later' as v from t where id = 1`.execute(store.db);
    assert.deepEqual(rows, [{ id: 1, v: 'later' }]);
  });

  it('RETURNING and streamed reads build rows the same way', async () => {
    const { rows } = await sql`update t set a = 'y' where id = 1 returning id, a`.execute(store.db);
    assert.deepEqual(rows, [{ id: 1, a: 'y' }]);
    const streamed = [];
    for await (const r of store.db
      .selectFrom('t' as any)
      .select(['id' as any])
      .orderBy('id' as any)
      .stream())
      streamed.push(r);
    assert.deepEqual(streamed, [{ id: 1 }, { id: 2 }]);
  });

  it('a `*` prepared before a column was added gets the new column', async () => {
    const all = () => sql`select * from t where id = 2`.execute(store.db).then((r) => r.rows);
    assert.deepEqual(await all(), [{ id: 2, a: null, 'odd "name"': 'r', n: null }]);
    await sql`alter table t add column b text default 'new'`.execute(store.db);
    assert.deepEqual(await all(), [{ id: 2, a: null, 'odd "name"': 'r', n: null, b: 'new' }]);
  });
});
