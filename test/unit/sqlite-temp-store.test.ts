// Where SQLite keeps a statement's journal: in memory for the store's own statements (a group's
// multi-row insert spilled it to a temporary file per group), on disk while migrating (a statement over
// every row of a big table would copy the table into memory).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Store } from '../../src/store/db.js';
import { journalsOnDisk, migrateToLatest } from '../../src/store/migrate.js';
import { openStore } from '../../src/store/open.js';
import { tempDir } from '../helpers/env.js';

const MEMORY = 2;
const FILE = 1;
const tempStore = async (store: Store) => Number((await sql<{ temp_store: number }>`pragma temp_store`.execute(store.db)).rows[0].temp_store);

describe('SQLite statement journals', () => {
  const store = openStore({ dataDir: tempDir() });
  after(() => store.close());

  it('are kept in memory by the store, on disk while migrating, and in memory again after', async () => {
    assert.equal(await tempStore(store), MEMORY);
    await migrateToLatest(store);
    assert.equal(await tempStore(store), MEMORY);
    const during = await journalsOnDisk(store, () => tempStore(store));
    assert.equal(during, FILE);
    assert.equal(await tempStore(store), MEMORY);
  });

  it('come back to memory when the work fails', async () => {
    await assert.rejects(
      journalsOnDisk(store, async () => {
        throw new Error('a migration failed');
      }),
      /a migration failed/,
    );
    assert.equal(await tempStore(store), MEMORY);
  });
});
