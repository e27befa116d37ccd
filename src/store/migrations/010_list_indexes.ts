import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * Indexes for reads that otherwise went through a whole table, all partial (only the rows such a read
 * looks for are in them, so they stay small and cost the other rows nothing):
 * - a user's asset list also shows the assets still on their way to them (not minted yet), by recipient;
 * - the chain tracker and /health look for transactions whose outcome is not applied yet;
 * - /health counts the jobs not done, by kind and status.
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
      await db.schema
        .createIndex('chain_txs_unhandled_idx')
        .on('chain_txs')
        .columns(['from_address', 'nonce'])
        .where(sql.ref('handled'), '=', sql.lit(0))
        .execute();
      await db.schema.createIndex('jobs_unfinished_idx').on('jobs').columns(['kind', 'status']).where(sql.ref('status'), '<>', sql.lit('done')).execute();
    },
  };
}
