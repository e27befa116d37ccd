// BusyRetryConnection: SQLITE_BUSY outside a transaction waits (asynchronously) and retries; inside a
// transaction, for other errors and past the deadline it gives up at once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, type DatabaseConnection, type QueryResult } from 'kysely';
import { BusyRetryConnection } from '../../src/store/sqlite/dialect.js';
import { BURST_GROUP, BURST_QUIET_MS, WriteTurns } from '../../src/store/write-turns.js';

function busyThen(failures: number, code = 'SQLITE_BUSY') {
  let calls = 0;
  const inner: DatabaseConnection = {
    async executeQuery<R>(): Promise<QueryResult<R>> {
      calls++;
      if (calls <= failures) throw Object.assign(new Error('database is locked'), { code });
      return { rows: [] };
    },
    streamQuery: () => {
      throw new Error('unused');
    },
  };
  return { inner, calls: () => calls };
}

const q = CompiledQuery.raw('begin immediate');

describe('BusyRetryConnection', () => {
  it('retries SQLITE_BUSY outside a transaction until the lock is free', async () => {
    const c = busyThen(5);
    await new BusyRetryConnection(c.inner, { inTransaction: false }).executeQuery(q);
    assert.equal(c.calls(), 6);
  });

  it('keeps the event loop turning while it waits', async () => {
    const c = busyThen(3);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    await new BusyRetryConnection(c.inner, { inTransaction: false }).executeQuery(q);
    clearInterval(timer);
    assert.ok(ticks > 0, 'timers ran during the wait');
  });

  it('does not retry inside a transaction, nor other errors', async () => {
    const inTx = busyThen(1);
    await assert.rejects(new BusyRetryConnection(inTx.inner, { inTransaction: true }).executeQuery(q), /locked/);
    assert.equal(inTx.calls(), 1);
    const other = busyThen(1, 'SQLITE_CONSTRAINT_UNIQUE');
    await assert.rejects(new BusyRetryConnection(other.inner, { inTransaction: false }).executeQuery(q), /locked/);
    assert.equal(other.calls(), 1);
  });

  it('gives up after the wait limit', async () => {
    const c = busyThen(Number.MAX_SAFE_INTEGER);
    const t0 = performance.now();
    await assert.rejects(new BusyRetryConnection(c.inner, { inTransaction: false }, 50).executeQuery(q), /locked/);
    // At least the limit; the upper bound only an order of magnitude that a busy machine also meets (one
    // that never gave up would not answer at all).
    const waited = performance.now() - t0;
    assert.ok(waited >= 50 && waited < 10_000, `waited ${waited} ms`);
    // Tried again before giving up. Only once, when another test's work held this process's event loop
    // past the limit between the tries (seen in CI: the unit files share a few processes).
    assert.ok(c.calls() >= 2, `${c.calls()} tries`);
  });

  it('the workers do not take the lock again while the main thread waits for it', async () => {
    // One write lock, as SQLite's: BEGIN IMMEDIATE takes it or fails busy; COMMIT gives it back.
    let holder: string | null = null;
    const order: string[] = [];
    const turns = new WriteTurns();
    const connection = (name: string, main: boolean) => {
      const database = { inTransaction: false };
      const inner: DatabaseConnection = {
        async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
          if (query.sql === 'begin immediate') {
            if (holder !== null) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
            holder = name;
            database.inTransaction = true;
            order.push(name);
          } else if (query.sql === 'commit') {
            holder = null;
            database.inTransaction = false;
          }
          return { rows: [] };
        },
        streamQuery: () => {
          throw new Error('unused');
        },
      };
      return new BusyRetryConnection(inner, database, 5000, undefined, { shared: turns, main });
    };
    const begin = CompiledQuery.raw('begin immediate');
    const commit = CompiledQuery.raw('commit');
    const api = connection('api', true);
    const workers = connection('workers', false);
    await workers.executeQuery(begin);
    const apiTurn = api.executeQuery(begin);
    await new Promise((r) => setTimeout(r, 5)); // the API waits for the lock now
    // The workers commit and begin their next transaction at once, as their loop does.
    await workers.executeQuery(commit);
    const next = workers.executeQuery(begin);
    await apiTurn;
    assert.deepEqual(order, ['workers', 'api'], 'the API took the lock first');
    await api.executeQuery(commit);
    await next;
    assert.deepEqual(order, ['workers', 'api', 'workers']);
  });

  it('a thread waiting for its turn wakes when another releases the lock', async () => {
    const turns = new WriteTurns();
    const mark = turns.mark();
    const t0 = Date.now();
    setTimeout(() => turns.released(), 10);
    // The timeout is far beyond what a loaded machine delays a 10 ms timer by: the two outcomes stay apart.
    await turns.untilReleased(mark, 60_000);
    assert.ok(Date.now() - t0 < 30_000, 'woken by the release, not by the timeout');
    await turns.untilReleased(mark, 60_000); // a release since the mark: no wait at all
  });

  it('minting waits while a burst of creates is written, until it pauses, at most its bound', async () => {
    const turns = new WriteTurns();
    let t0 = Date.now();
    assert.equal(await turns.afterBurst(1000), false);
    assert.ok(Date.now() - t0 < BURST_QUIET_MS, 'no burst: no wait');
    turns.createsCommitted(BURST_GROUP - 1);
    t0 = Date.now();
    assert.equal(await turns.afterBurst(1000), false);
    assert.ok(Date.now() - t0 < BURST_QUIET_MS, 'groups of light load are no burst');
    // A burst that goes on for 100 ms: the wait ends BURST_QUIET_MS after its last group.
    const feed = setInterval(() => turns.createsCommitted(BURST_GROUP), 5);
    setTimeout(() => clearInterval(feed), 100);
    turns.createsCommitted(BURST_GROUP);
    t0 = Date.now();
    assert.equal(await turns.afterBurst(1000), false, 'the burst paused');
    const waited = Date.now() - t0;
    // What the wait answers tells the outcomes apart (it ended as the burst paused / went on to its
    // bound); no upper bound on the time: a busy machine can hold this process's event loop for seconds.
    assert.ok(waited >= 100, `waited ${waited} ms`);
    // A burst that does not pause: the bound.
    const endless = setInterval(() => turns.createsCommitted(50), 5);
    turns.createsCommitted(50);
    t0 = Date.now();
    assert.equal(await turns.afterBurst(150), true, 'still bursting at the bound');
    clearInterval(endless);
    const bounded = Date.now() - t0;
    assert.ok(bounded >= 145, `waited ${bounded} ms`);
  });

  it('the burst is seen across threads (the creates are written in one, minting runs in another)', () => {
    const turns = new WriteTurns();
    const other = new WriteTurns(turns.buffer);
    other.createsCommitted(BURST_GROUP);
    const t0 = Date.now();
    return turns.afterBurst(1000).then(() => assert.ok(Date.now() - t0 >= BURST_QUIET_MS - 5, 'waited for the quiet'));
  });
});
