// Nonces of the chain accounts, counted in the database (`relayers.next_nonce`) so that many
// transactions go out without waiting for receipts, and two processes never sign the same nonce.
import type { Address, PublicClient } from 'viem';
import type { Tx } from '../store/db.js';

/** The database refused new work from a relayer: a rotation made it retiring after this process last read the set. */
export class RelayerNotActiveError extends Error {}

/**
 * The next nonce of `from`, counted in the database. Null when `from` is a relayer that takes no new
 * work: the state is part of the update, so a rotation's switch (which updates the same row) and a
 * recording never cross (on PostgreSQL the update waits for the switch and reads its result).
 */
export async function allocateNonce(tx: Tx, client: PublicClient, chainId: number, from: string, rotation: boolean): Promise<number | null> {
  const existing = await tx
    .selectFrom('relayers')
    .select(['next_nonce', 'state'])
    .where('chain_id', '=', chainId)
    .where('address', '=', from)
    .executeTakeFirst();
  if (!existing) {
    // The deployer and other system accounts: start from the chain's count, then count ourselves.
    const onChain = await client.getTransactionCount({ address: from as Address, blockTag: 'pending' });
    const recorded = await tx
      .selectFrom('chain_txs')
      .select((eb) => eb.fn.max('nonce').as('n'))
      .where('chain_id', '=', chainId)
      .where('from_address', '=', from)
      .executeTakeFirst();
    const start = Math.max(onChain, recorded?.n == null ? 0 : Number(recorded.n) + 1);
    // A plain insert, not an upsert: two processes counting the deployer's first nonce at once are two
    // recording the forwarder's deployment (forwarder-bootstrap.ts), and the key refuses the second.
    await tx
      .insertInto('relayers')
      .values({ address: from, chain_id: chainId, idx: -1, next_nonce: start + 1, updated_at: Date.now() })
      .execute();
    return start;
  }
  const row = await tx
    .updateTable('relayers')
    .set((eb) => ({ next_nonce: eb('next_nonce', '+', 1), updated_at: Date.now() }))
    .where('chain_id', '=', chainId)
    .where('address', '=', from)
    .where('state', 'in', rotation ? ['active', 'pending', 'retiring'] : ['active'])
    .returning('next_nonce')
    .executeTakeFirst();
  return row ? Number(row.next_nonce) - 1 : null;
}
