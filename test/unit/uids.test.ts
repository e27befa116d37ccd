// A create whose new uid is taken runs again with another (src/services/uids.ts), on either database's error.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_UID_ROUNDS, withNewUid } from '../../src/services/uids.js';

const sqliteTaken = () => Object.assign(new Error('UNIQUE constraint failed: users.uid'), { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
const pgTaken = () => Object.assign(new Error('duplicate key value violates unique constraint "users_pkey"'), { code: '23505', constraint: 'users_pkey' });

describe('withNewUid', () => {
  for (const [db, taken] of [['SQLite', sqliteTaken], ['PostgreSQL', pgTaken]] as const) {
    it(`tries another uid when the first is taken (${db})`, async () => {
      const draws = ['100000000001', '100000000002'];
      const tried: string[] = [];
      const uid = await withNewUid('users', async (u) => {
        tried.push(u);
        if (u === '100000000001') throw taken();
        return u;
      }, () => draws.shift()!);
      assert.equal(uid, '100000000002');
      assert.deepEqual(tried, ['100000000001', '100000000002']);
    });
  }

  it('other errors, other tables and a uid taken every time reach the caller', async () => {
    const other = Object.assign(new Error('UNIQUE constraint failed: users.email_key'), { code: 'SQLITE_CONSTRAINT_UNIQUE' });
    let calls = 0;
    await assert.rejects(withNewUid('users', async () => { calls++; throw other; }), /email_key/);
    assert.equal(calls, 1);
    await assert.rejects(withNewUid('assets', async () => { throw sqliteTaken(); }), /users\.uid/);
    calls = 0;
    await assert.rejects(withNewUid('users', async () => { calls++; throw pgTaken(); }), /users_pkey/);
    assert.equal(calls, MAX_UID_ROUNDS + 1);
  });
});
