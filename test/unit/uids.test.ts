// New uids come in runs (src/util/ids.ts); a create whose new uid is taken runs again with another
// (src/services/uids.ts), on either database's error.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_UID_ROUNDS, withNewUid } from '../../src/services/uids.js';
import { isUid, newEventId, newUid, restartUidRun, UID_MAX_STEP } from '../../src/util/ids.js';

describe('newUid', () => {
  it('12 digits in ascending runs with random steps, and a new run from a random place after a restart', () => {
    const runs: bigint[][] = [];
    for (let r = 0; r < 5; r++) {
      restartUidRun();
      runs.push(
        Array.from({ length: 500 }, () => {
          const u = newUid();
          assert.ok(isUid(u), u);
          return BigInt(u);
        }),
      );
    }
    const steps = new Set<bigint>();
    for (const run of runs) {
      for (let i = 1; i < run.length; i++) {
        const step = run[i] - run[i - 1];
        assert.ok(step >= 1n && step <= BigInt(UID_MAX_STEP), `step ${step}`);
        steps.add(step);
      }
    }
    assert.ok(steps.size > 300, 'the steps are drawn, not fixed');
    // The runs start far apart: none of the 5 starts within another run's stretch.
    const starts = runs.map((r) => r[0]).sort((a, b) => (a < b ? -1 : 1));
    for (let i = 1; i < starts.length; i++)
      assert.ok(starts[i] - starts[i - 1] > 500n * BigInt(UID_MAX_STEP), `runs ${starts[i - 1]} and ${starts[i]} overlap`);
  });
});

describe('newEventId', () => {
  it('a version 7 UUID: the time in ms first, so ids made later sort after, and random bits after it', async () => {
    const before = Date.now();
    const early = Array.from({ length: 1000 }, newEventId);
    await new Promise((r) => setTimeout(r, 5)); // a later millisecond
    const late = newEventId();
    const after = Date.now();
    for (const id of [...early, late]) {
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const ms = Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
      assert.ok(ms >= before && ms <= after, `${id}: ${ms} not within ${before}..${after}`);
    }
    assert.equal(new Set(early).size, early.length);
    for (const id of early) assert.ok(id < late, `${id} does not sort before ${late}`);
    // The bits after the time are drawn: within one millisecond the ids still differ in the next 12 bits.
    assert.ok(new Set(early.map((id) => id.slice(15, 18))).size > 100);
  });
});

const sqliteTaken = () => Object.assign(new Error('UNIQUE constraint failed: users.uid'), { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
const pgTaken = () => Object.assign(new Error('duplicate key value violates unique constraint "users_pkey"'), { code: '23505', constraint: 'users_pkey' });

describe('withNewUid', () => {
  for (const [db, taken] of [
    ['SQLite', sqliteTaken],
    ['PostgreSQL', pgTaken],
  ] as const) {
    it(`tries another uid when the first is taken (${db})`, async () => {
      const draws = ['100000000001', '100000000002'];
      const tried: string[] = [];
      const uid = await withNewUid(
        'users',
        async (u) => {
          tried.push(u);
          if (u === '100000000001') throw taken();
          return u;
        },
        () => draws.shift()!,
      );
      assert.equal(uid, '100000000002');
      assert.deepEqual(tried, ['100000000001', '100000000002']);
    });
  }

  it('a taken uid moves the run of new uids elsewhere', async () => {
    newUid();
    const before = BigInt(newUid());
    let first = true;
    const uid = await withNewUid('users', async (u) => {
      if (first) {
        first = false;
        throw sqliteTaken();
      }
      return u;
    });
    const after = BigInt(uid);
    const gap = after > before ? after - before : before - after;
    assert.ok(gap > 2n * BigInt(UID_MAX_STEP), `the run went on from ${before} to ${after}`);
  });

  it('other errors, other tables and a uid taken every time reach the caller', async () => {
    const other = Object.assign(new Error('UNIQUE constraint failed: users.email_key'), { code: 'SQLITE_CONSTRAINT_UNIQUE' });
    let calls = 0;
    await assert.rejects(
      withNewUid('users', async () => {
        calls++;
        throw other;
      }),
      /email_key/,
    );
    assert.equal(calls, 1);
    await assert.rejects(
      withNewUid('assets', async () => {
        throw sqliteTaken();
      }),
      /users\.uid/,
    );
    calls = 0;
    await assert.rejects(
      withNewUid('users', async () => {
        calls++;
        throw pgTaken();
      }),
      /users_pkey/,
    );
    assert.equal(calls, MAX_UID_ROUNDS + 1);
  });
});
