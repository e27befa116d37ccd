import type { Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/** A stuck transaction is replaced (same nonce, higher fees): keep the hashes it had before. */
export function txReplacement(_dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .alterTable('chain_txs')
        .addColumn('prior_hashes', 'text', (c) => c.notNull().defaultTo('[]'))
        .execute();
      await db.schema
        .alterTable('chain_txs')
        .addColumn('bumps', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  };
}
