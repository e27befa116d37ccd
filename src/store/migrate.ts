import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Store } from './db.js';
import { core } from './migrations/001_core.js';
import { webhooks } from './migrations/002_webhooks.js';

/** The one migration history, in order. Each entry is a function of the dialect. */
function migrations(store: Store): Record<string, Migration> {
  return {
    '001_core': core(store.dialect),
    '002_webhooks': webhooks(store.dialect),
  };
}

export async function migrateToLatest(store: Store): Promise<string[]> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(store) };
  const migrator = new Migrator({ db: store.db, provider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
