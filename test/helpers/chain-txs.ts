// A recorded chain transaction inserted as the tests need it: a sent mint of the home chain unless told
// otherwise, its outcome not applied.
import type { Insertable } from 'kysely';
import type { Db } from '../../src/store/db.js';
import type { ChainTxTable } from '../../src/store/schema.js';

type Given = Pick<Insertable<ChainTxTable>, 'nonce' | 'hash'> & Partial<Insertable<ChainTxTable>>;

/** Inserts the transaction; its id. */
export async function recordedTx(db: Db, given: Given): Promise<number> {
  const t = Date.now();
  const row = await db
    .insertInto('chain_txs')
    .values({
      chain_id: 31337,
      from_address: '0xabc',
      kind: 'asset.mint',
      ref: 'x',
      payload: '{}',
      raw: '0x',
      status: 'sent',
      handled: 0,
      created_at: t,
      updated_at: t,
      ...given,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}
