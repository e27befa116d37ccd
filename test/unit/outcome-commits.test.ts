// Outcomes that are ready together share a commit on SQLite (src/chain/outcome-commits.ts), each in a
// savepoint: one that fails is undone alone and the others commit; on PostgreSQL each has a
// transaction of its own, side by side. On real databases.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Store, Tx } from '../../src/store/db.js';
import { openStore } from '../../src/store/open.js';
import { MAX_OUTCOMES_PER_COMMIT, OutcomeCommits } from '../../src/chain/outcome-commits.js';
import { writeTurns } from '../../src/store/write-turns.js';
import { pgStoreWithTableFor } from '../helpers/migrated-store.js';
import { tempDir } from '../helpers/env.js';

const insert = (tx: Tx, id: number) => sql`insert into t (id, a) values (${id}, ${`v${id}`})`.execute(tx);

describe('outcomes committed together (SQLite)', () => {
  let store: Store;
  before(async () => {
    store = openStore({ dataDir: tempDir() });
    await sql`create table t (id int primary key, a text)`.execute(store.db);
  });
  after(() => store.close());
  const ids = async () => (await sql<{ id: number }>`select id from t order by id`.execute(store.db)).rows.map((r) => r.id);

  it('applies the outcomes that come in one turn in one transaction, in id order, each with its result', async () => {
    const commits = new OutcomeCommits(store.db);
    const txs = new Set<Tx>();
    const order: number[] = [];
    const results = await Promise.all(
      [3, 1, 2].map((id) =>
        commits.commit(id, async (tx) => {
          txs.add(tx);
          order.push(id);
          await insert(tx, id);
          return () => id * 10;
        }),
      ),
    );
    assert.equal(txs.size, 1, 'one transaction for the three');
    assert.deepEqual(order, [1, 2, 3]);
    assert.deepEqual(
      results.map((after) => (after ? after() : null)),
      [30, 10, 20],
      'each caller gets its own outcome’s result',
    );
    assert.deepEqual(await ids(), [1, 2, 3]);
  });

  it('undoes a failed outcome alone: the others of its group commit, its caller gets its error', async () => {
    const commits = new OutcomeCommits(store.db);
    const settled = await Promise.allSettled([
      commits.commit(11, (tx) => insert(tx, 11).then(() => undefined)),
      commits.commit(12, async (tx) => {
        await insert(tx, 12);
        await insert(tx, 1); // taken: a constraint error after a write of its own
      }),
      commits.commit(13, async (tx) => {
        await insert(tx, 13);
        throw new Error('handler failed');
      }),
      commits.commit(14, (tx) => insert(tx, 14).then(() => undefined)),
    ]);
    assert.deepEqual(
      settled.map((s) => s.status),
      ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
    );
    assert.match(String((settled[1] as PromiseRejectedResult).reason), /UNIQUE/);
    assert.match(String((settled[2] as PromiseRejectedResult).reason), /handler failed/);
    assert.deepEqual(await ids(), [1, 2, 3, 11, 14], 'the failed ones’ own writes are undone');
  });

  it(`commits at most ${MAX_OUTCOMES_PER_COMMIT} outcomes together`, async () => {
    const commits = new OutcomeCommits(store.db);
    const txs: Tx[] = [];
    const n = MAX_OUTCOMES_PER_COMMIT + 1;
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        commits.commit(100 + i, async (tx) => {
          txs.push(tx);
        }),
      ),
    );
    assert.equal(new Set(txs).size, 2);
    assert.equal(txs.filter((t) => t === txs[0]).length, MAX_OUTCOMES_PER_COMMIT);
  });

  it('ends a group after the outcome under way when a request waits for the write lock', async () => {
    const commits = new OutcomeCommits(store.db);
    const txs: Tx[] = [];
    const ids = [201, 202, 203];
    const turns = writeTurns();
    const results = await Promise.all(
      ids.map((id) =>
        commits.commit(id, async (tx) => {
          txs.push(tx);
          await insert(tx, id);
          // The API's thread starts waiting while the first outcome is applied, and stops in the second.
          if (id === 201) turns.mainWaiting(true);
          if (id === 202) turns.mainWaiting(false);
          return () => id;
        }),
      ),
    );
    assert.equal(new Set(txs).size, 2, 'the group ended after the first outcome; the other two shared the next');
    assert.notEqual(txs[0], txs[1]);
    assert.equal(txs[1], txs[2]);
    assert.deepEqual(
      results.map((after) => (after ? after() : null)),
      ids,
    );
  });
});

describe('outcomes on PostgreSQL: a transaction each, side by side', () => {
  const block = pgStoreWithTableFor({ poolMode: 'session', poolSize: 4, statementTimeoutMs: 0, idleInTransactionTimeoutMs: 0 });

  it('runs two outcomes in two transactions at once', async () => {
    const commits = new OutcomeCommits(block.store.db);
    const txs = new Set<Tx>();
    let second!: () => void;
    const secondStarted = new Promise<void>((resolve) => (second = resolve));
    await Promise.all([
      commits.commit(1, async (tx) => {
        txs.add(tx);
        await insert(tx, 1);
        await secondStarted; // would never come if the outcomes took turns
      }),
      commits.commit(2, async (tx) => {
        txs.add(tx);
        second();
        await insert(tx, 2);
      }),
    ]);
    assert.equal(txs.size, 2);
    const { rows } = await sql<{ n: string }>`select count(*) as n from t`.execute(block.store.db);
    assert.equal(Number(rows[0].n), 2);
  });
});
