// Row locks asked of the store (src/store/locks.ts): PostgreSQL gets the clauses, SQLite leaves them out
// (its transactions hold the whole database) and the query still runs there.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../../src/store/db.js';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { lockForShare, lockForUpdate, skipLocked, workersInOneProcess } from '../../src/store/locks.js';
import { tempDir } from '../helpers/env.js';
import { migratedSqliteDir } from '../helpers/schema-copies.js';

describe('row locks by dialect', () => {
  let sqlite: Store;
  let postgres: Store;
  before(async () => {
    sqlite = openStore({ dataDir: await migratedSqliteDir() });
    await migrateToLatest(sqlite);
    // Only compiled, never connected: the pool opens a connection at the first query.
    postgres = openStore({ databaseUrl: 'postgres://nobody@127.0.0.1:1/none', dataDir: tempDir() });
  });
  after(async () => {
    await sqlite.close();
    await postgres.close();
  });

  const claim = (s: Store) => s.db.selectFrom('jobs').select('id').where('status', '=', 'queued').orderBy('id').limit(5);

  it('PostgreSQL: FOR UPDATE, FOR SHARE, FOR UPDATE SKIP LOCKED', () => {
    assert.match(lockForUpdate(claim(postgres)).compile().sql, / for update$/);
    assert.match(lockForShare(claim(postgres)).compile().sql, / for share$/);
    assert.match(skipLocked(claim(postgres)).compile().sql, / for update skip locked$/);
  });

  it('SQLite: the same queries without the clauses, and they run in a transaction', async () => {
    const plain = claim(sqlite).compile().sql;
    for (const lock of [lockForUpdate, lockForShare, skipLocked]) assert.equal(lock(claim(sqlite)).compile().sql, plain);
    // Other modifiers are kept.
    assert.match(sqlite.db.selectFrom('jobs').select('kind').distinct().compile().sql, /^select distinct /);
    await sqlite.db
      .insertInto('jobs')
      .values({ kind: 'k', ref: 'r', group_key: null, payload: '{}', status: 'queued', run_at: 0, attempts: 0, max_attempts: 1, created_at: 0, updated_at: 0 })
      .execute();
    const rows = await sqlite.db.transaction().execute((tx) => skipLocked(tx.selectFrom('jobs').select('ref').where('status', '=', 'queued')).execute());
    assert.deepEqual(rows, [{ ref: 'r' }]);
  });

  it('one worker process on SQLite, many possible on PostgreSQL', () => {
    assert.equal(workersInOneProcess(sqlite.dialect), true);
    assert.equal(workersInOneProcess(postgres.dialect), false);
  });
});
