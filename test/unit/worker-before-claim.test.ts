// A job handler's `beforeClaim` (what lets a burst of creates go before the mints) is awaited before
// every claim: while it waits, the jobs stay queued, unclaimed, for anyone; then they run.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { Store } from '../../src/store/db.js';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { JobQueue } from '../../src/jobs/queue.js';
import { WorkerPool } from '../../src/jobs/worker.js';
import { WALLET_JOB } from '../../src/jobs/kinds.js';
import { waitFor } from '../helpers/env.js';
import { migratedSqliteDir } from '../helpers/schema-copies.js';

describe('a job handler that waits before it claims', () => {
  let store: Store;
  before(async () => {
    store = openStore({ dataDir: await migratedSqliteDir(), checkpoints: 'none' });
    await migrateToLatest(store);
  });
  after(() => store.close());

  it('claims nothing while it waits, and everything once it goes on', async () => {
    const queue = new JobQueue(store.db, store.dialect);
    await queue.enqueueMany(
      store.db,
      [1, 2, 3].map((n) => ({ kind: WALLET_JOB, ref: `user-${n}` })),
    );
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let waits = 0;
    const handled: string[] = [];
    const pool = new WorkerPool(queue, pino({ level: 'silent' }), 'test');
    pool.start([
      {
        kind: WALLET_JOB,
        batchSize: 10,
        leaseMs: 10_000,
        pollMs: 20,
        async beforeClaim() {
          waits++;
          await released;
        },
        async handle(jobs) {
          for (const j of jobs) handled.push(j.ref);
          await queue.completeMany(
            store.db,
            jobs.map((j) => j.id),
          );
        },
      },
    ]);
    try {
      await waitFor('the loop waiting', async () => waits > 0, 5000, 5);
      await new Promise((r) => setTimeout(r, 100)); // several polls' worth
      const statuses = await store.db.selectFrom('jobs').select('status').where('kind', '=', WALLET_JOB).execute();
      assert.deepEqual(
        statuses.map((s) => s.status),
        ['queued', 'queued', 'queued'],
        'nothing claimed while it waits',
      );
      assert.deepEqual(handled, []);
      release();
      await waitFor('the jobs handled', async () => handled.length === 3, 5000, 5);
      assert.deepEqual(handled.sort(), ['user-1', 'user-2', 'user-3']);
    } finally {
      release();
      await pool.stop();
    }
  });

  it('claims at most the number it resolves to, then claims again at once', async () => {
    const queue = new JobQueue(store.db, store.dialect);
    await queue.enqueueMany(
      store.db,
      [1, 2, 3, 4, 5].map((n) => ({ kind: WALLET_JOB, ref: `limited-${n}` })),
    );
    const batches: number[] = [];
    const pool = new WorkerPool(queue, pino({ level: 'silent' }), 'test');
    pool.start([
      {
        kind: WALLET_JOB,
        batchSize: 10,
        leaseMs: 10_000,
        pollMs: 60_000, // a loop that slept between claims would not finish in time
        beforeClaim: async () => 2,
        async handle(jobs) {
          batches.push(jobs.length);
          await queue.completeMany(
            store.db,
            jobs.map((j) => j.id),
          );
        },
      },
    ]);
    try {
      await waitFor('the jobs handled', async () => batches.reduce((a, b) => a + b, 0) === 5, 5000, 5);
      assert.deepEqual(batches, [2, 2, 1]);
    } finally {
      await pool.stop();
    }
  });
});
