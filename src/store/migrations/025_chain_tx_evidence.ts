import type { Kysely } from 'kysely';

/**
 * `chain_txs.awaiting`: why a transaction's outcome is not judged yet although its account has moved
 * past its nonce (its receipt not served, the holder of its nonce not proved): the reconciler writes it,
 * `/health`, `mintworks chain txs` and the console show it. Null while nothing is awaited.
 */
export function chainTxEvidence() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('chain_txs').addColumn('awaiting', 'text').execute();
    },
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('chain_txs').dropColumn('awaiting').execute();
    },
  };
}
