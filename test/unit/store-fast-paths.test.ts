// The store's fast paths on a real SQLite file: precompiled queries, the group commit (durable WAL
// flush shared by concurrent commits) and the split of mint batches by gas.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { CompiledQuery } from 'kysely';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { openStore } from '../../src/store/open.js';
import { precompiled } from '../../src/store/precompiled.js';
import { withStatementCache } from '../../src/store/sqlite/statements.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { splitByGas } from '../../src/services/assets/mint-job.js';
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
    await store.db
      .insertInto('meta')
      .values([
        { key: 'a', value: '1' },
        { key: 'b', value: '2' },
        { key: 'c', value: '3' },
      ])
      .execute();
    // The placeholders are used in the opposite order of the parameters: slots must be mapped, not assumed.
    const between = precompiled(2, (db, lo, hi) => db.selectFrom('meta').select('key').where('value', '<=', hi).where('value', '>=', lo).orderBy('key'));
    assert.deepEqual(
      (await between(store.db, '1', '2')).map((r) => r.key),
      ['a', 'b'],
    );
    assert.deepEqual(
      (await between(store.db, '2', '3')).map((r) => r.key),
      ['b', 'c'],
    );
    assert.deepEqual(await between(store.db, '9', '9'), []);
    const unused = precompiled(2, (db, k) => db.selectFrom('meta').select('key').where('key', '=', k));
    await assert.rejects(unused(store.db, 'a', 'b'), /placeholder is not used/);
  });

  it('group commits: every caller is answered once durable, and all rows are there', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const { result, durable } = await store.groupCommit(async (tx) => {
          await tx
            .insertInto('meta')
            .values({ key: `g${i}`, value: String(i) })
            .execute();
          return i;
        });
        await durable;
        return result;
      }),
    );
    assert.deepEqual(
      results,
      Array.from({ length: 20 }, (_, i) => i),
    );
    const n = await store.db
      .selectFrom('meta')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('key', 'like', 'g%')
      .executeTakeFirstOrThrow();
    assert.equal(Number(n.n), 20);
    assert.ok(fs.existsSync(path.join(dir, 'mintworks.sqlite-wal')));
    // A failing group rolls back and rejects; the connection is back to normal afterwards.
    await assert.rejects(
      store.groupCommit(async (tx) => {
        await tx.insertInto('meta').values({ key: 'x1', value: '1' }).execute();
        throw new Error('boom');
      }),
      /boom/,
    );
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
      real(
        fd,
        (err) =>
          void (gate ?? Promise.resolve()).then(() => {
            flushed++;
            cb(err);
          }),
      )) as typeof fs.fdatasync;
    try {
      await store.db.transaction().execute((tx) => tx.insertInto('meta').values({ key: 'f1', value: '1' }).execute());
      assert.equal(flushed, 1, 'a transaction resolves after its flush');
      await store.db.insertInto('meta').values({ key: 'f2', value: '2' }).execute();
      assert.equal(flushed, 2, 'an autocommit write too');
      await store.db.updateTable('meta').set({ value: '3' }).where('key', '=', 'f2').returning('key').execute();
      assert.equal(flushed, 3, 'a write returning rows too');
      await store.db.selectFrom('meta').selectAll().execute();
      assert.equal(flushed, 3, 'a read does not flush');
      await assert.rejects(
        store.db.transaction().execute(async (tx) => {
          await tx.insertInto('meta').values({ key: 'f3', value: '3' }).execute();
          throw new Error('boom');
        }),
        /boom/,
      );
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

describe('a blocking flush of the WAL (SQLite)', () => {
  const dir = tempDir();
  const store = openStore({ dataDir: dir });
  after(() => store.close());

  it('flushNow flushes the WAL file on this thread, and throws when the flush fails', async () => {
    await migrateToLatest(store);
    const real = fs.fdatasyncSync;
    const flushed: string[] = [];
    let failWith: NodeJS.ErrnoException | null = null;
    (fs as { fdatasyncSync: typeof fs.fdatasyncSync }).fdatasyncSync = (fd: number) => {
      flushed.push(fs.readlinkSync(`/proc/self/fd/${fd}`));
      if (failWith) throw failWith;
      real(fd);
    };
    try {
      store.flushNow();
      assert.deepEqual(flushed, [path.join(dir, 'mintworks.sqlite-wal')]);
      failWith = Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
      assert.throws(
        () => store.flushNow(),
        (err: NodeJS.ErrnoException) => err.code === 'EIO',
      );
      assert.equal(flushed.length, 2);
    } finally {
      (fs as { fdatasyncSync: typeof fs.fdatasyncSync }).fdatasyncSync = real;
    }
  });
});

describe('mint batches sized by gas', () => {
  const cid = 'ipfs://bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy';
  const holder = (i: number) => `0x${(i + 1).toString(16).padStart(40, '0')}` as `0x${string}`;
  // Token i to one of `holders` recipients, ids in sequence.
  const calls = (n: number, tokenUri: string | null, holders = n) =>
    Array.from({ length: n }, (_, i) => ({ to: holder(i % holders), tokenId: i + 1, tokenUri }));

  it('splits by count and by gas, never leaving an item out or empty ranges', () => {
    assert.deepEqual(splitByGas(calls(5, null), 2, 10n ** 9n), [
      [0, 2],
      [2, 4],
      [4, 5],
    ]);
    const all = calls(25, cid);
    const budget = mintGasFor(all.slice(0, 10));
    const ranges = splitByGas(all, 1000, budget);
    assert.deepEqual(ranges, [
      [0, 10],
      [10, 20],
      [20, 25],
    ]);
    for (const [a, b] of ranges) assert.ok(mintGasFor(all.slice(a, b)) <= budget);
    // An item larger than the budget alone still goes out, on its own.
    assert.deepEqual(splitByGas(calls(2, cid), 10, 1n), [
      [0, 1],
      [1, 2],
    ]);
    assert.deepEqual(splitByGas([], 10, budget), []);
  });

  it('counts a recipient and a bitmap word once per batch: tokens for few players make larger batches', () => {
    const budget = 12_000_000n;
    const fewPlayers = splitByGas(calls(1000, null, 50), 1000, budget);
    const allDistinct = splitByGas(calls(1000, null), 1000, budget);
    assert.ok(fewPlayers[0][1] > 1.5 * allDistinct[0][1], `${fewPlayers[0][1]} vs ${allDistinct[0][1]} per batch`);
    for (const [a, b] of [...fewPlayers, ...allDistinct]) assert.ok(b > a);
    // The same recipient in other case is the same recipient.
    const lower = calls(2, null, 1);
    const mixed = [lower[0], { ...lower[1], to: lower[1].to.toUpperCase().replace('0X', '0x') as `0x${string}` }];
    assert.equal(mintGasFor(mixed), mintGasFor(lower));
    // Sparse ids read a bitmap word each; ids in sequence share one per 256.
    const sparse = calls(10, null, 1).map((c, i) => ({ ...c, tokenId: i * 256 + 1 }));
    assert.ok(mintGasFor(sparse) > mintGasFor(calls(10, null, 1)));
  });
});
