import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * Every accepted asset writes a job row, and (kind, ref) indexed every one of them, by a random uid:
 * one more random B-tree page written per asset. Only wallet-creation jobs are ever looked up by ref,
 * so the index now covers those alone (a partial index, on both databases; the query names the kind
 * as a literal so that both planners can use it).
 */
export function leanJobIndexes(_dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.dropIndex('jobs_ref_idx').execute();
      await db.schema.createIndex('jobs_wallet_ref_idx').on('jobs').column('ref').where(sql.ref('kind'), '=', 'wallet.create').execute();
    },
  };
}
