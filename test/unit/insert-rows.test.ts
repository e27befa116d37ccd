// Multi-row inserts with their text compiled once (src/store/db.ts insertRows), on real SQLite and
// PostgreSQL databases (there as arrays, one per column): the rows read back as given, for several row
// counts and again from the kept text.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { insertRows, openStore, type Store } from '../../src/store/db.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { freshPostgres, tempDir } from '../helpers/env.js';

const job = (ref: string, i: number) => ({ kind: 'asset.mint', ref, group_key: i % 2 ? null : `g${i}`, payload: `{"i":${i}}`, status: 'queued' as const, run_at: 1000 + i, attempts: 0, max_attempts: 25, created_at: 5, updated_at: 6 });

for (const db of ['sqlite', 'postgres'] as const) {
  describe(`insertRows (${db})`, () => {
    let store: Store;
    let drop = async () => {};
    before(async () => {
      const pgdb = db === 'postgres' ? await freshPostgres() : null;
      if (pgdb) drop = pgdb.drop;
      store = openStore({ databaseUrl: pgdb?.url, dataDir: tempDir() });
      await migrateToLatest(store);
    });
    after(async () => {
      await store?.close();
      await drop();
    });

    it('inserts every row with its values, for any number of rows, again and again', async () => {
      const batches = [3, 1, 3, 7, 3].map((n, b) => Array.from({ length: n }, (_, i) => job(`${db}-${b}-${i}`, i)));
      for (const rows of batches) await insertRows(store.db, 'jobs', rows);
      const read = await store.db.selectFrom('jobs').select(['kind', 'ref', 'group_key', 'payload', 'status', 'run_at', 'attempts', 'max_attempts', 'created_at', 'updated_at']).where('ref', 'like', `${db}-%`).orderBy('id').execute();
      assert.deepEqual(read, batches.flat());
    });

    it('text of any kind arrives as it was sent (quotes, backslashes, braces, commas, NULL as a word, empty, emoji)', async () => {
      const texts = ['say "hi"', 'back\\slash \\"', '{a,b}', 'a, b', 'NULL', 'null', '', ' spaced ', '\u{1F5E1} sword', '{"k":["v",1]}', "it's"];
      await insertRows(store.db, 'jobs', texts.map((payload, i) => ({ ...job(`${db}-text-${i}`, i), payload })));
      const read = await store.db.selectFrom('jobs').select(['ref', 'payload', 'group_key']).where('ref', 'like', `${db}-text-%`).orderBy('id').execute();
      assert.deepEqual(read.map((r) => r.payload), texts);
      assert.deepEqual(read.map((r) => r.group_key), texts.map((_, i) => (i % 2 ? null : `g${i}`)));
    });

    it('rows that name other columns are refused, and nothing is written', async () => {
      const { ref: _ref, ...noRef } = job('x', 1);
      await assert.rejects(insertRows(store.db, 'jobs', [job(`${db}-bad-0`, 0), { ...noRef, locked_by: 'w' } as never]), /same columns/);
      await assert.rejects(insertRows(store.db, 'jobs', [job(`${db}-bad-1`, 0), noRef as never]), /same columns/);
      assert.equal((await store.db.selectFrom('jobs').select('id').where('ref', 'like', `${db}-bad-%`).execute()).length, 0);
    });
  });
}
