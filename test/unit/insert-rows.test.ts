// Multi-row inserts with their text compiled once (src/store/inserts.ts insertRows), on real SQLite and
// PostgreSQL databases (there as arrays, one per column): the rows read back as given, for several row
// counts and again from the kept text; several tables in one go (insertRowsTogether); on SQLite the rows
// in chunks of a few sizes, so that a burst of every group size prepares a few texts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chunkSizes, insertRows, insertRowsTogether } from '../../src/store/inserts.js';
import { sqlObservers } from '../../src/store/sqlite/statements.js';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { migratedStoreFor } from '../helpers/migrated-store.js';
import { migratedSqliteDir } from '../helpers/schema-copies.js';

const job = (ref: string, i: number) => ({
  kind: 'asset.mint',
  ref,
  group_key: i % 2 ? null : `g${i}`,
  payload: `{"i":${i}}`,
  status: 'queued' as const,
  run_at: 1000 + i,
  attempts: 0,
  max_attempts: 25,
  created_at: 5,
  updated_at: 6,
});

for (const db of ['sqlite', 'postgres'] as const) {
  describe(`insertRows (${db})`, () => {
    const store = migratedStoreFor(db);

    it('inserts every row with its values, for any number of rows, again and again', async () => {
      const batches = [3, 1, 3, 7, 3].map((n, b) => Array.from({ length: n }, (_, i) => job(`${db}-${b}-${i}`, i)));
      for (const rows of batches) await insertRows(store.db, 'jobs', rows);
      const read = await store.db
        .selectFrom('jobs')
        .select(['kind', 'ref', 'group_key', 'payload', 'status', 'run_at', 'attempts', 'max_attempts', 'created_at', 'updated_at'])
        .where('ref', 'like', `${db}-%`)
        .orderBy('id')
        .execute();
      assert.deepEqual(read, batches.flat());
    });

    it('text of any kind arrives as it was sent (quotes, backslashes, braces, commas, NULL as a word, empty, emoji)', async () => {
      const texts = ['say "hi"', 'back\\slash \\"', '{a,b}', 'a, b', 'NULL', 'null', '', ' spaced ', '\u{1F5E1} sword', '{"k":["v",1]}', "it's"];
      await insertRows(
        store.db,
        'jobs',
        texts.map((payload, i) => ({ ...job(`${db}-text-${i}`, i), payload })),
      );
      const read = await store.db.selectFrom('jobs').select(['ref', 'payload', 'group_key']).where('ref', 'like', `${db}-text-%`).orderBy('id').execute();
      assert.deepEqual(
        read.map((r) => r.payload),
        texts,
      );
      assert.deepEqual(
        read.map((r) => r.group_key),
        texts.map((_, i) => (i % 2 ? null : `g${i}`)),
      );
    });

    it('rows that name other columns are refused, and nothing is written', async () => {
      const { ref: _ref, ...noRef } = job('x', 1);
      await assert.rejects(insertRows(store.db, 'jobs', [job(`${db}-bad-0`, 0), { ...noRef, locked_by: 'w' } as never]), /same columns/);
      await assert.rejects(insertRows(store.db, 'jobs', [job(`${db}-bad-1`, 0), noRef as never]), /same columns/);
      assert.equal((await store.db.selectFrom('jobs').select('id').where('ref', 'like', `${db}-bad-%`).execute()).length, 0);
    });

    it('inserts into several tables together, again and again; a part left empty is skipped', async () => {
      for (const [b, n] of [2, 5, 1].entries()) {
        const jobs = Array.from({ length: n }, (_, i) => job(`${db}-together-${b}-${i}`, i));
        const meta = Array.from({ length: n + 1 }, (_, i) => ({ key: `${db}-together-${b}-${i}`, value: `v${b}.${i}` }));
        await insertRowsTogether(store.db, [
          { table: 'jobs', rows: jobs },
          { table: 'meta', rows: meta },
          { table: 'events', rows: [] },
        ]);
      }
      const jobs = await store.db.selectFrom('jobs').select(['ref', 'payload']).where('ref', 'like', `${db}-together-%`).orderBy('id').execute();
      assert.deepEqual(
        jobs.map((j) => j.ref),
        ['0-0', '0-1', '1-0', '1-1', '1-2', '1-3', '1-4', '2-0'].map((x) => `${db}-together-${x}`),
      );
      const meta = await store.db.selectFrom('meta').select(['key', 'value']).where('key', 'like', `${db}-together-%`).orderBy('key').execute();
      assert.equal(meta.length, 3 + 6 + 2);
      assert.deepEqual(
        meta.find((m) => m.key === `${db}-together-1-5`),
        { key: `${db}-together-1-5`, value: 'v1.5' },
      );
    });

    it('many rows outside a transaction are all or nothing: a row that fails leaves none of the others', async () => {
      await store.db
        .insertInto('meta')
        .values({ key: `${db}-chunked-taken`, value: 'first' })
        .execute();
      const rows = Array.from({ length: 150 }, (_, i) => ({ key: `${db}-chunked-${String(i).padStart(3, '0')}`, value: `v${i}` }));
      rows[140] = { key: `${db}-chunked-taken`, value: 'second' }; // in a later statement than the first rows' on SQLite
      await assert.rejects(insertRows(store.db, 'meta', rows));
      assert.equal((await store.db.selectFrom('meta').select('key').where('key', 'like', `${db}-chunked-%`).execute()).length, 1);
    });

    it('in a transaction, a part that fails leaves nothing of the others', async () => {
      await store.db
        .insertInto('meta')
        .values({ key: `${db}-taken`, value: 'first' })
        .execute();
      await assert.rejects(
        store.db.transaction().execute((tx) =>
          insertRowsTogether(tx, [
            { table: 'jobs', rows: [job(`${db}-rolled-back`, 0)] },
            { table: 'meta', rows: [{ key: `${db}-taken`, value: 'second' }] },
          ]),
        ),
      );
      assert.equal((await store.db.selectFrom('jobs').select('id').where('ref', '=', `${db}-rolled-back`).execute()).length, 0);
      assert.equal((await store.db.selectFrom('meta').select('value').where('key', '=', `${db}-taken`).executeTakeFirst())?.value, 'first');
    });
  });
}

describe('insertRows on SQLite: rows in chunks of a few sizes', () => {
  it('cuts any count into 64s, then at most three each of 16, 4 and 1, largest first', () => {
    assert.deepEqual(chunkSizes(0), []);
    assert.deepEqual(chunkSizes(1), [1]);
    assert.deepEqual(chunkSizes(63), [16, 16, 16, 4, 4, 4, 1, 1, 1]);
    assert.deepEqual(chunkSizes(64), [64]);
    assert.deepEqual(chunkSizes(150), [64, 64, 16, 4, 1, 1]);
    for (let n = 0; n <= 400; n++) {
      const sizes = chunkSizes(n);
      assert.equal(
        sizes.reduce((a, b) => a + b, 0),
        n,
      );
      assert.ok(sizes.every((x) => [64, 16, 4, 1].includes(x)));
    }
  });

  it('prepares one text per chunk size, whatever the counts of rows that come (a burst of groups of every size)', async () => {
    const store = openStore({ dataDir: await migratedSqliteDir() });
    await migrateToLatest(store);
    const texts = new Set<string>();
    // This test's rows' columns only (another test file in the process may insert other columns meanwhile).
    const columns = Object.keys(job('x', 0))
      .map((c) => `"${c}"`)
      .join(', ');
    const observe = (text: string) => void (text.startsWith(`insert into "jobs" (${columns}) values`) && texts.add(text));
    sqlObservers.add(observe);
    try {
      let total = 0;
      for (let n = 1; n <= 130; n++) {
        await store.db.transaction().execute((tx) =>
          insertRows(
            tx,
            'jobs',
            Array.from({ length: n }, (_, i) => job(`chunks-${n}-${i}`, i)),
          ),
        );
        total += n;
      }
      assert.equal((await store.db.selectFrom('jobs').select('id').where('ref', 'like', 'chunks-%').execute()).length, total);
      assert.equal(texts.size, 4);
    } finally {
      sqlObservers.delete(observe);
      await store.close();
    }
  });
});
