// The durable job queue on a real SQLite database and a real PostgreSQL one: claim with a lease,
// complete, defer, retry, expiry; on PostgreSQL a claim is one statement, and claims at once never take
// the same job.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../../src/store/db.js';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { JobQueue } from '../../src/jobs/queue.js';
import { tempDir } from '../helpers/env.js';
import { migratedPostgres, migratedSqliteDir } from '../helpers/schema-copies.js';

for (const kind of ['sqlite', 'postgres'] as const)
  describe(`job queue (${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'})`, () => {
    let store: Store;
    let now = 1_000_000;
    let q: JobQueue;
    let drop = async () => {};
    before(async () => {
      if (kind === 'postgres') {
        const pg = await migratedPostgres();
        drop = pg.drop;
        store = openStore({ databaseUrl: pg.url, dataDir: tempDir() });
      } else {
        store = openStore({ dataDir: await migratedSqliteDir() });
      }
      await migrateToLatest(store);
      q = new JobQueue(store.db, store.dialect, () => now);
    });
    after(async () => {
      await store.close();
      await drop();
    });

    it("claims due jobs once, in order, with a lease; a crashed worker's jobs come back after the lease", async () => {
      await q.enqueue(store.db, { kind: 'wallet.create', ref: 'a' });
      await q.enqueue(store.db, { kind: 'wallet.create', ref: 'b' });
      await q.enqueue(store.db, { kind: 'wallet.create', ref: 'later', runAt: now + 10_000 });
      const first = await q.claim('wallet.create', 10, 'w1', 5000);
      assert.deepEqual(
        first.map((j) => j.ref),
        ['a', 'b'],
      );
      assert.equal(first[0].attempts, 1);
      assert.deepEqual(await q.claim('wallet.create', 10, 'w2', 5000), [], 'leased jobs are not handed out twice');
      now += 6000; // w1 died: its lease ran out
      const again = await q.claim('wallet.create', 10, 'w2', 5000);
      assert.deepEqual(
        again.map((j) => j.ref),
        ['a', 'b'],
      );
      await q.complete(store.db, again[0].id);
      now += 6000;
      assert.deepEqual(
        (await q.claim('wallet.create', 10, 'w3', 5000)).map((j) => j.ref),
        ['b', 'later'],
      );
    });

    it('defer puts a job back without counting an attempt; fail retries with backoff, then gives up', async () => {
      await q.enqueue(store.db, { kind: 'reward.withdraw', ref: 'x', maxAttempts: 2 });
      let [j] = await q.claim('reward.withdraw', 1, 'w', 5000);
      await q.defer(store.db, j, 1000);
      assert.deepEqual(await q.claim('reward.withdraw', 1, 'w', 5000), []);
      now += 1000;
      [j] = await q.claim('reward.withdraw', 1, 'w', 5000);
      assert.equal(j.attempts, 1);
      assert.equal(await q.fail(j, 'boom'), false);
      assert.deepEqual(await q.claim('reward.withdraw', 1, 'w', 5000), [], 'not before its backoff');
      now += 1000;
      [j] = await q.claim('reward.withdraw', 1, 'w', 5000);
      assert.equal(j.attempts, 2);
      assert.equal(await q.fail(j, 'boom again'), true, 'final after max attempts');
      now += 1_000_000;
      assert.deepEqual(await q.claim('reward.withdraw', 1, 'w', 5000), []);
      const row = await store.db.selectFrom('jobs').selectAll().where('id', '=', j.id).executeTakeFirstOrThrow();
      assert.equal(row.status, 'failed');
      assert.equal(row.last_error, 'boom again');
    });

    it("a crashed worker's jobs come before the queued ones, then the queued oldest first, each once", async () => {
      await q.enqueueMany(
        store.db,
        Array.from({ length: 30 }, (_, i) => ({ kind: 'asset.prepare' as const, ref: `p${i}`, runAt: now + i })),
      );
      now += 30;
      const crashed = await q.claim('asset.prepare', 3, 'w1', 5000); // p0..p2, whose worker dies
      await q.enqueue(store.db, { kind: 'asset.prepare', ref: 'early', runAt: now - 1_000 }); // queued, due before all
      now += 6000;
      const claimed = await q.claim('asset.prepare', 10, 'w2', 5000);
      assert.deepEqual(claimed.map((j) => j.ref).sort(), ['early', 'p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7', 'p8'].sort());
      assert.deepEqual(claimed.filter((j) => crashed.some((c) => c.id === j.id)).length, 3, 'the expired leases are taken first');
      const rest = await q.claim('asset.prepare', 100, 'w3', 5000);
      assert.deepEqual(
        rest.map((j) => j.ref),
        Array.from({ length: 21 }, (_, i) => `p${9 + i}`),
      );
      assert.deepEqual(await q.claim('asset.prepare', 100, 'w3', 5000), []);
    });

    it('a failure or an outage after part of a batch completed puts back only the jobs still running', async () => {
      // A handler that commits part of its batch (one group's transaction) and then throws: the worker
      // fails or defers the whole batch. The part already done must stay done, or it runs a second time.
      for (const ref of ['done-then-failed', 'failed', 'done-then-deferred', 'deferred'])
        await q.enqueue(store.db, { kind: 'item.forward', ref, payload: { action: 'burn' } });
      const jobs = await q.claim('item.forward', 4, 'w', 5000);
      const byRef = new Map(jobs.map((j) => [j.ref, j]));
      await q.completeMany(store.db, [byRef.get('done-then-failed')!.id, byRef.get('done-then-deferred')!.id]);
      // Not failed for good by this call either (its handler's onDead would undo what it did).
      assert.equal(await q.fail({ ...byRef.get('done-then-failed')!, maxAttempts: 1 }, 'boom'), false);
      for (const ref of ['done-then-failed', 'failed']) await q.fail(byRef.get(ref)!, 'boom');
      for (const ref of ['done-then-deferred', 'deferred']) await q.defer(store.db, byRef.get(ref)!, 0);
      await q.deferMany(store.db, [byRef.get('done-then-deferred')!], 0);
      now += 60_000;
      const again = await q.claim('item.forward', 10, 'w', 5000);
      assert.deepEqual(again.map((j) => j.ref).sort(), ['deferred', 'failed']);
      const statuses = await store.db.selectFrom('jobs').select(['ref', 'status']).where('kind', '=', 'item.forward').orderBy('ref').execute();
      assert.deepEqual(
        statuses.filter((r) => r.ref.startsWith('done')).map((r) => r.status),
        ['done', 'done'],
      );
    });

    it('a handler that outlived its lease cannot fail or defer the job another worker claimed since', async () => {
      await q.enqueue(store.db, { kind: 'asset.forward', ref: 'slow', payload: { action: 'burn' } });
      await q.enqueue(store.db, { kind: 'asset.forward', ref: 'beside', payload: { action: 'burn' } });
      const [mine, mineBeside] = await q.claim('asset.forward', 2, 'w1', 5000);
      now += 6000; // w1's lease ran out while its handler still ran
      const [theirs] = await q.claim('asset.forward', 1, 'w2', 5000);
      assert.equal(theirs.id, mine.id);
      assert.equal(await q.fail({ ...mine, maxAttempts: 1 }, 'w1 threw at last'), false, 'not failed for good by w1');
      // w1's batch waits as a whole: the job w2 holds is not put back (a third worker could claim it),
      // the one still w1's is.
      await q.deferMany(store.db, [mine, mineBeside], 0);
      await q.defer(store.db, mine, 0);
      const row = await store.db
        .selectFrom('jobs')
        .select(['status', 'locked_by', 'last_error', 'attempts'])
        .where('id', '=', mine.id)
        .executeTakeFirstOrThrow();
      assert.deepEqual(row, { status: 'running', locked_by: 'w2', last_error: null, attempts: 2 });
      const beside = await store.db.selectFrom('jobs').select(['status', 'attempts']).where('id', '=', mineBeside.id).executeTakeFirstOrThrow();
      assert.deepEqual(beside, { status: 'queued', attempts: 0 }, 'deferred without counting an attempt');
      assert.deepEqual(
        (await q.claim('asset.forward', 10, 'w3', 5000)).map((j) => j.ref),
        ['beside'],
        'only the job w1 still held is claimable again',
      );
      await q.complete(store.db, theirs.id);
    });

    it('claims at once take every due job, none twice', async () => {
      await q.enqueueMany(
        store.db,
        Array.from({ length: 40 }, (_, i) => ({ kind: 'collection.info' as const, ref: `c${i}` })),
      );
      const claims = await Promise.all(Array.from({ length: 6 }, (_, i) => q.claim('collection.info', 8, `w${i}`, 5000)));
      const ids = claims.flat().map((j) => j.id);
      assert.equal(new Set(ids).size, ids.length, 'no job claimed twice');
      const rest = await q.claim('collection.info', 100, 'late', 5000);
      assert.equal(ids.length + rest.length, 40, 'each job claimed by one of them');
      assert.ok(
        claims.every((c) => c.length <= 8),
        'no claim over its limit',
      );
    });

    it('wakeGroup makes a waiting group due now', async () => {
      await q.enqueue(store.db, { kind: 'asset.mint', ref: 'm', groupKey: 'user-1', runAt: now + 60_000, payload: { round: 1 } });
      assert.deepEqual(await q.claim('asset.mint', 1, 'w', 5000), []);
      await q.wakeGroup(store.db, 'asset.mint', 'user-1');
      assert.deepEqual(
        (await q.claim('asset.mint', 1, 'w', 5000)).map((j) => j.ref),
        ['m'],
      );
    });
  });
