// The store's fast paths on a real SQLite file: precompiled queries, the group commit (durable WAL
// flush shared by concurrent commits) and the split of mint batches by gas.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { CompiledQuery } from 'kysely';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { openStore, precompiled, withStatementCache } from '../../src/store/db.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { splitByGas } from '../../src/services/assets.js';
import { mintGasFor } from '../../src/chain/token-uri.js';
import { tempDir } from '../helpers/env.js';

describe('store fast paths (SQLite)', () => {
  const dir = tempDir();
  const store = openStore({ dataDir: dir });
  after(() => store.close());

  it('the statement cache keeps short statements and only a few long ones (IN lists, multi-row inserts)', () => {
    const database = new SQLite(':memory:');
    try {
      const cache = withStatementCache(database, 1000, 4);
      const short = cache.prepare('select 1');
      const inList = (n: number) => `select ${Array.from({ length: n }, () => '?').join(', ')}`;
      const long = Array.from({ length: 6 }, (_, i) => cache.prepare(inList(1000 + i)));
      assert.equal(cache.prepare('select 1'), short, 'a short statement is reused');
      assert.equal(cache.prepare(inList(1005)), long[5], 'a recent long statement is reused');
      assert.notEqual(cache.prepare(inList(1000)), long[0], 'the oldest long statements were dropped');
      assert.equal(cache.prepare(inList(1005)).all(...Array.from({ length: 1005 }, (_, i) => i)).length, 1);
    } finally {
      database.close();
    }
  });

  it('a precompiled query binds new values on every call, in the order of its placeholders', async () => {
    await migrateToLatest(store);
    await store.db.insertInto('meta').values([{ key: 'a', value: '1' }, { key: 'b', value: '2' }, { key: 'c', value: '3' }]).execute();
    // The placeholders are used in the opposite order of the parameters: slots must be mapped, not assumed.
    const between = precompiled(2, (db, lo, hi) => db.selectFrom('meta').select('key').where('value', '<=', hi).where('value', '>=', lo).orderBy('key'));
    assert.deepEqual((await between(store.db, '1', '2')).map((r) => r.key), ['a', 'b']);
    assert.deepEqual((await between(store.db, '2', '3')).map((r) => r.key), ['b', 'c']);
    assert.deepEqual(await between(store.db, '9', '9'), []);
    const unused = precompiled(2, (db, k) => db.selectFrom('meta').select('key').where('key', '=', k));
    await assert.rejects(unused(store.db, 'a', 'b'), /placeholder is not used/);
  });

  it('group commits: every caller is answered once durable, and all rows are there', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const { result, durable } = await store.groupCommit(async (tx) => {
          await tx.insertInto('meta').values({ key: `g${i}`, value: String(i) }).execute();
          return i;
        });
        await durable;
        return result;
      }),
    );
    assert.deepEqual(results, Array.from({ length: 20 }, (_, i) => i));
    const n = await store.db.selectFrom('meta').select((eb) => eb.fn.countAll<number>().as('n')).where('key', 'like', 'g%').executeTakeFirstOrThrow();
    assert.equal(Number(n.n), 20);
    assert.ok(fs.existsSync(path.join(dir, 'mintworks.sqlite-wal')));
    // A failing group rolls back and rejects; the connection is back to normal afterwards.
    await assert.rejects(store.groupCommit(async (tx) => {
      await tx.insertInto('meta').values({ key: 'x1', value: '1' }).execute();
      throw new Error('boom');
    }), /boom/);
    assert.equal(await store.db.selectFrom('meta').select('key').where('key', '=', 'x1').executeTakeFirst(), undefined);
  });

  it('every commit and every write outside a transaction returns only once the WAL is flushed; a group commit hands the flush back', async () => {
    // Commits run with synchronous = NORMAL (no fsync under the write lock); the flush follows them.
    const [sync] = (await store.db.executeQuery<{ synchronous: number }>(CompiledQuery.raw('pragma synchronous'))).rows;
    assert.equal(sync.synchronous, 1);
    const real = fs.fdatasync;
    let flushed = 0;
    let release: () => void = () => {};
    let gate: Promise<void> | null = null;
    (fs as { fdatasync: typeof fs.fdatasync }).fdatasync = ((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) =>
      real(fd, (err) => void (gate ?? Promise.resolve()).then(() => { flushed++; cb(err); }))) as typeof fs.fdatasync;
    try {
      await store.db.transaction().execute((tx) => tx.insertInto('meta').values({ key: 'f1', value: '1' }).execute());
      assert.equal(flushed, 1, 'a transaction resolves after its flush');
      await store.db.insertInto('meta').values({ key: 'f2', value: '2' }).execute();
      assert.equal(flushed, 2, 'an autocommit write too');
      await store.db.updateTable('meta').set({ value: '3' }).where('key', '=', 'f2').returning('key').execute();
      assert.equal(flushed, 3, 'a write returning rows too');
      await store.db.selectFrom('meta').selectAll().execute();
      assert.equal(flushed, 3, 'a read does not flush');
      await assert.rejects(store.db.transaction().execute(async (tx) => {
        await tx.insertInto('meta').values({ key: 'f3', value: '3' }).execute();
        throw new Error('boom');
      }), /boom/);
      assert.equal(flushed, 3, 'a rollback does not flush');

      gate = new Promise<void>((r) => (release = r));
      const { durable } = await store.groupCommit((tx) => tx.insertInto('meta').values({ key: 'f4', value: '4' }).execute());
      assert.equal(flushed, 3, 'the group commit returned before its flush');
      let settled = false;
      void durable.then(() => (settled = true));
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      assert.equal(settled, false, 'durable waits for the flush');
      release();
      await durable;
      assert.equal(flushed, 4);
    } finally {
      (fs as { fdatasync: typeof fs.fdatasync }).fdatasync = real;
      release();
    }
  });
});

describe('mint batches sized by gas', () => {
  const dev = (n: number) => Array.from({ length: n }, () => null);
  const cid = 'ipfs://bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy';

  it('splits by count and by gas, never leaving an item out or empty ranges', () => {
    assert.deepEqual(splitByGas(dev(5), 2, 10n ** 9n), [[0, 2], [2, 4], [4, 5]]);
    const budget = mintGasFor(Array.from({ length: 10 }, () => ({ tokenUri: cid })));
    const ranges = splitByGas(Array.from({ length: 25 }, () => cid), 1000, budget);
    assert.deepEqual(ranges, [[0, 10], [10, 20], [20, 25]]);
    for (const [a, b] of ranges) assert.ok(mintGasFor(Array.from({ length: b - a }, () => ({ tokenUri: cid }))) <= budget);
    // An item larger than the budget alone still goes out, on its own.
    assert.deepEqual(splitByGas([cid, cid], 10, 1n), [[0, 1], [1, 2]]);
    assert.deepEqual(splitByGas([], 10, budget), []);
  });
});
