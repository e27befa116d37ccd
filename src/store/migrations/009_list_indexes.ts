import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * A user's asset list also shows the assets still on their way to them (not minted yet), found by
 * recipient. Without an index that half of the list read every asset of the App. Partial: only the
 * unminted are in it, so it stays small and minted assets cost it nothing.
 */
export function listIndexes(_dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createIndex('assets_unminted_for_idx')
        .on('assets')
        .columns(['app_uid', 'mint_for_user_uid', 'created_at'])
        .where(sql.ref('mint_status'), '<>', sql.lit('minted'))
        .execute();
    },
  };
}
