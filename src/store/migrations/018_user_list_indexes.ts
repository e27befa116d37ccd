import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * A user's asset list reads its own index entries whatever the data. The list is paged newest first
 * by (created_at, uid); the owner and unminted-recipient indexes ended at created_at, so they could
 * not give that order, and a planner that had to choose between them (then a sort) and the App's
 * (app_uid, created_at, uid) index (no sort, but a filter on the owner row by row) took the App's: a
 * user with 5 assets in an App where another holds a million had every one of those read per page
 * (seconds on SQLite, hundreds of ms on PostgreSQL at 16 connections). With uid as their last column
 * they give the page order themselves and match two equality columns: no planner prefers the App's.
 * The same for the console's list by a rare status (failed, transferring, burning, burned).
 */
export function userListIndexes(_dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.dropIndex('assets_owner_idx').execute();
      await db.schema
        .createIndex('assets_owner_idx')
        .on('assets')
        .columns(['app_uid', 'owner_user_uid', 'created_at', 'uid'])
        .where(sql.ref('owner_user_uid'), 'is not', null)
        .execute();
      await db.schema.dropIndex('assets_unminted_for_idx').execute();
      await db.schema
        .createIndex('assets_unminted_for_idx')
        .on('assets')
        .columns(['app_uid', 'mint_for_user_uid', 'created_at', 'uid'])
        .where(sql.ref('mint_status'), '<>', sql.lit('minted'))
        .execute();
      // The console's asset list by a rare status: only the assets in it, newest first (a filter that
      // matched none walked every asset of the App). Queries name the status as a literal, which is
      // how both databases know the partial index holds every row they look for.
      const byStatus: [string, string, number | string][] = [
        ['assets_failed_idx', 'mint_status', 'failed'],
        ['assets_transferring_idx', 'is_transferring', 1],
        ['assets_burning_idx', 'is_burning', 1],
        ['assets_burned_idx', 'is_burned', 1],
      ];
      for (const [name, column, value] of byStatus) {
        await db.schema.createIndex(name).on('assets').columns(['app_uid', 'created_at', 'uid']).where(sql.ref(column), '=', sql.lit(value)).execute();
      }
    },
  };
}
