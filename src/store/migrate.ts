import { Migrator, sql, type Migration, type MigrationProvider } from 'kysely';
import type { Store } from './db.js';
import { core } from './migrations/001_core.js';
import { forwarding } from './migrations/003_forwarding.js';
import { lifecycle } from './migrations/004_lifecycle.js';
import { txReplacement } from './migrations/007_tx_replacement.js';
import { rewards } from './migrations/005_rewards.js';
import { webhooks } from './migrations/002_webhooks.js';
import { metadata } from './migrations/006_metadata.js';
import { hardening } from './migrations/008_hardening.js';
import { leanJobIndexes } from './migrations/009_lean_job_indexes.js';
import { listIndexes } from './migrations/010_list_indexes.js';
import { consoleLists } from './migrations/011_console_lists.js';
import { multichain } from './migrations/012_multichain.js';
import { leanAssetIndexes } from './migrations/013_lean_asset_indexes.js';
import { changeNotifications } from './migrations/014_change_notifications.js';
import { wakeups } from './migrations/019_wakeups.js';
import { pendingAssetsIndex } from './migrations/021_pending_assets_index.js';
import { userListIndexes } from './migrations/018_user_list_indexes.js';
import { custody } from './migrations/017_custody.js';
import { relayerSets } from './migrations/020_relayer_sets.js';
import { userListStatistics } from './migrations/022_user_list_statistics.js';
import { auditChain, operatorAttempts } from './migrations/023_audit_chain.js';
import { chainTxEvidence } from './migrations/025_chain_tx_evidence.js';
import { collectionOptions } from './migrations/026_collection_options.js';
import { items } from './migrations/027_items.js';
import { itemMetadata } from './migrations/028_item_metadata.js';
import { ownerIndexBurned } from './migrations/029_owner_index_burned.js';
import { inFlightMints } from './migrations/030_in_flight_mints.js';
import { assetParentsKept } from './migrations/031_asset_parents_kept.js';
import { openJobIndexes } from './migrations/032_open_job_indexes.js';
import { signedBytesLz4 } from './migrations/033_signed_bytes_lz4.js';
import { dropAssetNameIndex } from './migrations/034_drop_asset_name_index.js';

/** The one migration history, in order. Each entry is a function of the dialect. */
function migrations(store: Store, defaultChainId: number): Record<string, Migration> {
  return {
    '001_core': core(store.dialect),
    '003_forwarding': forwarding(store.dialect),
    '002_webhooks': webhooks(store.dialect),
    '004_lifecycle': lifecycle(store.dialect),
    '005_rewards': rewards(store.dialect),
    '006_metadata': metadata(store.dialect),
    '007_tx_replacement': txReplacement(store.dialect),
    '008_hardening': hardening(store.dialect),
    '009_lean_job_indexes': leanJobIndexes(store.dialect),
    '010_list_indexes': listIndexes(store.dialect),
    '011_console_lists': consoleLists(store.dialect),
    '012_multichain': multichain(store.dialect, defaultChainId),
    '013_lean_asset_indexes': leanAssetIndexes(store.dialect),
    '014_change_notifications': changeNotifications(store.dialect),
    '017_custody': custody(store.dialect),
    '018_user_list_indexes': userListIndexes(store.dialect),
    '019_wakeups': wakeups(store.dialect),
    '020_relayer_sets': relayerSets(store.dialect),
    '021_pending_assets_index': pendingAssetsIndex(store.dialect),
    '022_user_list_statistics': userListStatistics(store.dialect),
    '023_audit_chain': auditChain(store.dialect),
    '024_operator_attempts': operatorAttempts(store.dialect),
    '025_chain_tx_evidence': chainTxEvidence(),
    '026_collection_options': collectionOptions(),
    '027_items': items(store.dialect),
    '028_item_metadata': itemMetadata(),
    '029_owner_index_burned': ownerIndexBurned(),
    '030_in_flight_mints': inFlightMints(store.dialect),
    '031_asset_parents_kept': assetParentsKept(store.dialect),
    '032_open_job_indexes': openJobIndexes(),
    '033_signed_bytes_lz4': signedBytesLz4(store.dialect),
    '034_drop_asset_name_index': dropAssetNameIndex(),
  };
}

/** `defaultChainId`: the chain existing rows belong to when the database has not recorded one yet. */
export async function migrateToLatest(store: Store, defaultChainId = 31337): Promise<string[]> {
  return migrateTo(store, null, defaultChainId);
}

/** Migrates up (or down) to the named migration; null = the latest. Tests use it to build old databases. */
export async function migrateTo(store: Store, target: string | null, defaultChainId = 31337): Promise<string[]> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(store, defaultChainId) };
  // Unordered: migrations written side by side can land in either order (026 after 027 had run, on a
  // database of the version between them); each touches its own columns and tables, so one that was
  // missed runs late instead of refusing to start.
  const migrator = new Migrator({ db: store.migrationDb?.() ?? store.db, provider, allowUnorderedMigrations: true });
  const { error, results } = await journalsOnDisk(store, () => (target === null ? migrator.migrateToLatest() : migrator.migrateTo(target)));
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Runs `work` with SQLite's statement journals spilled to a temporary file past 64 KB, as SQLite does by
 * default, then as the store had them (in memory: sqlite/open.ts). A migration's statement over every
 * row of a big table keeps a copy of each page it changes: in memory, an update of a 56 MB table raised
 * the process's peak memory by 57 MB, and a million-asset upgrade would hold the table there.
 */
export async function journalsOnDisk<T>(store: Store, work: () => Promise<T>): Promise<T> {
  if (store.dialect !== 'sqlite') return work();
  // The store's own setting is put back as it was, whatever sqlite/open.ts chose (0-2: default, file, memory).
  const { temp_store: before } = (await sql<{ temp_store: number }>`pragma temp_store`.execute(store.db)).rows[0];
  await sql`pragma temp_store = FILE`.execute(store.db);
  try {
    return await work();
  } finally {
    await sql`pragma temp_store = ${sql.raw(String(Number(before)))}`.execute(store.db);
  }
}
