// Migrations written side by side land in either order: a database that ran a later one (027) before an
// earlier one existed (026) gets the earlier one at its next start instead of refusing to start.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { collectionOptions } from '../../src/store/migrations/026_collection_options.js';
import { tempDir } from '../helpers/env.js';

describe('migration order', () => {
  it('runs a migration older than the last one executed (026 after 027), once', async () => {
    const store = openStore({ dataDir: tempDir() });
    try {
      await migrateToLatest(store);
      // The database as the version with 027 and without 026 left it.
      await collectionOptions().down(store.db);
      await sql`delete from kysely_migration where name = '026_collection_options'`.execute(store.db);
      assert.deepEqual(await migrateToLatest(store), ['026_collection_options']);
      assert.deepEqual(await migrateToLatest(store), []);
      const cols = await sql<{ name: string }>`select name from pragma_table_info('collections')`.execute(store.db);
      assert.ok(['royalty_receiver', 'royalty_bps', 'soulbound', 'image_url', 'contract_uri', 'standard'].every((c) => cols.rows.some((r) => r.name === c)));
    } finally {
      await store.close();
    }
  });
});
