import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * The console's list of assets not minted yet reads only them: an index of the App's pending assets,
 * newest first, like those of the rare statuses (migration 018). Pending is a backlog at most, so the
 * index stays small (a row leaves it when its asset is minted); without it the list walked the App's
 * assets newest first to the first pending one, past every minted asset.
 */
export function pendingAssetsIndex(_dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createIndex('assets_pending_idx')
        .on('assets')
        .columns(['app_uid', 'created_at', 'uid'])
        .where(sql.ref('mint_status'), '=', sql.lit('pending'))
        .execute();
    },
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropIndex('assets_pending_idx').ifExists().execute();
    },
  };
}
