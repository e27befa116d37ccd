import type { Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * Indexes for the console's lists, read newest first with keyset pagination: an App's assets, a
 * reward's allocations and claims. Each is appended at its right edge (created_at only grows), so a
 * write adds little. An App's assets filtered by collection are read by token id instead (the
 * collection's unique index): no index for that.
 */
export function consoleLists(_dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.createIndex('assets_app_created_idx').on('assets').columns(['app_uid', 'created_at', 'uid']).execute();
      await db.schema.createIndex('allocations_reward_created_idx').on('allocations').columns(['reward_uid', 'created_at', 'uid']).execute();
      await db.schema.createIndex('claims_reward_created_idx').on('claims').columns(['reward_uid', 'created_at', 'uid']).execute();
    },
  };
}
