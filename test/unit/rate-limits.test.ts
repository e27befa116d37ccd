// Fixed-window counters (src/services/requests/rate-limits.ts) with a controlled clock. The shared store here is
// a Map standing in for the database table (the real upsert is tested against SQLite and PostgreSQL
// in test/integration/hardening-suite.ts): the unit under test is the counting and flushing logic.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WindowCounters, type CounterStore, type Increment } from '../../src/services/requests/rate-limits.js';

/** The database's semantics: same window adds, a newer window restarts, an older one changes nothing. */
function memoryStore(): CounterStore & { rows: Map<string, { window: number; hits: number }>; calls: Increment[][]; failing: boolean } {
  const rows = new Map<string, { window: number; hits: number }>();
  const store = {
    rows,
    calls: [] as Increment[][],
    failing: false,
    async add(incs: Increment[]) {
      if (store.failing) throw new Error('database down');
      store.calls.push(incs);
      return incs.map((i) => {
        const r = rows.get(i.bucket);
        const next = !r || r.window < i.window ? { window: i.window, hits: i.n } : r.window === i.window ? { window: r.window, hits: r.hits + i.n } : r;
        rows.set(i.bucket, next);
        return { bucket: i.bucket, window: next.window, hits: next.hits };
      });
    },
    async sweep(window: number) {
      for (const [k, r] of rows) if (r.window < window) rows.delete(k);
    },
  };
  return store;
}

describe('rate-limit window counters', () => {
  it('admit exactly `limit` per window in one process, with the reset at the end of the window', async () => {
    let now = 120_000 + 5_000; // 5 s into window 2
    const c = new WindowCounters(memoryStore(), { now: () => now });
    for (let i = 1; i <= 5; i++) {
      const u = c.take('key:a', 5);
      assert.equal(u.allowed, true);
      assert.equal(u.used, i);
      assert.equal(u.resetAt, 180);
    }
    assert.equal(c.take('key:a', 5).allowed, false);
    assert.equal(c.usage('key:a').used, 5, 'refused requests are not counted');
    assert.equal(c.take('key:b', 5).allowed, true, 'another bucket is untouched');
    now = 180_000;
    assert.equal(c.take('key:a', 5).allowed, true, 'a new window starts from zero');
    assert.equal(c.usage('key:a').used, 1);
  });

  it('flush sends increments in one batch and learns what other processes counted', async () => {
    const now = 60_000;
    const store = memoryStore();
    const p1 = new WindowCounters(store, { now: () => now });
    const p2 = new WindowCounters(store, { now: () => now });
    for (let i = 0; i < 3; i++) p1.take('key:a', 10);
    for (let i = 0; i < 4; i++) p2.take('key:a', 10);
    p2.take('key:b', 10);
    await p1.flush();
    await p2.flush();
    assert.equal(store.calls.length, 2);
    assert.deepEqual(
      store.calls[1],
      [
        { bucket: 'key:a', window: 1, n: 4 },
        { bucket: 'key:b', window: 1, n: 1 },
      ],
      'sorted, one row per bucket',
    );
    assert.equal(store.rows.get('key:a')!.hits, 7);
    assert.equal(p2.usage('key:a').used, 7, 'p2 knows p1 took 3');
    await p1.flush(); // nothing pending: no write
    assert.equal(store.calls.length, 2);
    // p1 learns at its next flush with something to send
    p1.take('key:a', 10);
    await p1.flush();
    assert.equal(p1.usage('key:a').used, 8);
    // together they admit 10, not 20: at most what one process admits between two flushes over
    let admitted = 0;
    for (let round = 0; round < 10; round++) {
      if (p1.take('key:a', 10).allowed) admitted++;
      if (p2.take('key:a', 10).allowed) admitted++;
      await p1.flush();
      await p2.flush();
    }
    assert.equal(store.rows.get('key:a')!.hits, 8 + admitted);
    assert.ok(8 + admitted <= 10 + 1, `${8 + admitted} admitted of 10 (tolerance: one flush interval)`);
  });

  it('a process started mid-window takes over the window total at its first flush', async () => {
    const now = 60_000;
    const store = memoryStore();
    store.rows.set('key:a', { window: 1, hits: 9 });
    const fresh = new WindowCounters(store, { now: () => now });
    assert.equal(fresh.take('key:a', 10).allowed, true);
    await fresh.flush();
    assert.equal(fresh.usage('key:a').used, 10);
    assert.equal(fresh.take('key:a', 10).allowed, false);
  });

  it('keeps counting locally while the store fails, and sends the backlog when it is back', async () => {
    const now = 60_000;
    const store = memoryStore();
    const c = new WindowCounters(store, { now: () => now });
    store.failing = true;
    for (let i = 0; i < 3; i++) c.hit('ip:1.2.3.4');
    await c.flush();
    assert.equal(c.usage('ip:1.2.3.4').used, 3);
    store.failing = false;
    await c.flush();
    assert.equal(store.rows.get('ip:1.2.3.4')!.hits, 3);
    assert.equal(c.usage('ip:1.2.3.4').used, 3, 'not counted twice');
  });

  it('increments of a window that has passed do not count in the new one; old buckets are dropped', async () => {
    let now = 60_000;
    const store = memoryStore();
    const c = new WindowCounters(store, { now: () => now });
    for (let i = 0; i < 5; i++) c.hit('key:a');
    now = 120_000;
    c.hit('key:a');
    await c.flush();
    assert.deepEqual(store.rows.get('key:a'), { window: 2, hits: 1 });
    assert.equal(c.usage('key:a').used, 1);
    now = 240_000;
    await c.flush(); // sweeps windows before 3
    assert.equal(store.rows.size, 0);
  });

  it('stop() flushes what is pending', async () => {
    const store = memoryStore();
    const c = new WindowCounters(store, { now: () => 60_000, flushMs: 60_000 });
    c.start();
    c.hit('key:a');
    await c.stop();
    assert.equal(store.rows.get('key:a')!.hits, 1);
  });
});
