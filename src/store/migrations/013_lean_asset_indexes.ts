import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * Fewer index entries per created asset. A new asset has no owner, no transaction and (most often) no
 * unique-name key yet, so indexes on those columns only hold rows that have one: creating an asset
 * writes three B-tree entries fewer, and the WAL flushed before each 201 is that much smaller.
 * Lookups by those columns (`owner_user_uid = ?`, `unique_name_key = ?`) imply `is not null`, so both
 * databases still use the indexes. Nothing looks assets up by `mint_tx_id`: that index goes.
 */
export function leanAssetIndexes(_dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.dropIndex('assets_mint_tx_idx').execute();
      await db.schema.dropIndex('assets_owner_idx').execute();
      await db.schema
        .createIndex('assets_owner_idx')
        .on('assets')
        .columns(['app_uid', 'owner_user_uid', 'created_at'])
        .where(sql.ref('owner_user_uid'), 'is not', null)
        .execute();
      await db.schema.dropIndex('assets_collection_unique_name_key_uq').execute();
      await db.schema
        .createIndex('assets_collection_unique_name_key_uq')
        .on('assets')
        .columns(['collection_uid', 'unique_name_key'])
        .unique()
        .where(sql.ref('unique_name_key'), 'is not', null)
        .execute();
    },
  };
}
