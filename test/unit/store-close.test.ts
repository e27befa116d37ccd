// A PostgreSQL store's close ends every connection it opened, whatever it was used for: one that only
// ran the migrations (the CLI's, a test's template) had left the migrations' connection open. The
// database is a copy of the latest schema: the migrations still open their connection to find nothing to do.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { migrateToLatest } from '../../src/store/migrate.js';
import { openStore } from '../../src/store/open.js';
import { tempDir, waitFor, withPgAdmin } from '../helpers/env.js';
import { migratedPostgres } from '../helpers/schema-copies.js';

function sessionsOn(database: string): Promise<number> {
  return withPgAdmin(async (c) =>
    Number((await c.query<{ n: string }>('select count(*) as n from pg_stat_activity where datname = $1', [database])).rows[0].n),
  );
}

describe('closing a PostgreSQL store', () => {
  for (const use of ['migrated only', 'migrated and queried'] as const) {
    it(`${use}: no session is left on the database`, async () => {
      const pgdb = await migratedPostgres();
      const database = new URL(pgdb.url).pathname.slice(1);
      try {
        const store = openStore({ databaseUrl: pgdb.url, dataDir: tempDir() });
        await migrateToLatest(store);
        if (use === 'migrated and queried') await store.db.selectFrom('apps').select('uid').execute();
        assert.ok((await sessionsOn(database)) > 0, 'the store had a session open');
        await store.close();
        // A closed session leaves the server's list a moment after its client's end; a connection left
        // open would stay for the pool's idle timeout (10 s).
        await waitFor('no session left', async () => (await sessionsOn(database)) === 0, 3_000, 50);
      } finally {
        await pgdb.drop();
      }
    });
  }
});
