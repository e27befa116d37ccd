// A recorded chain transaction inserted as the tests need it: a sent mint of the home chain unless told
// otherwise, its outcome not applied.
import type { Insertable } from 'kysely';
import type { Db } from '../../src/store/db.js';
import type { ChainTxTable } from '../../src/store/schema.js';
import { inFlightMintOf } from '../../src/services/assets/in-flight-mints.js';

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

/**
 * The mint transaction of each asset that has one: the one under way (`in_flight_mints`) or else the
 * one that minted it (the asset's `mint_tx_id`). Assets in none are left out.
 */
export async function mintTxIds(db: Db, assetUids: string[]): Promise<Map<string, number>> {
  if (assetUids.length === 0) return new Map();
  const rows = await db
    .selectFrom('assets')
    .leftJoin('in_flight_mints', inFlightMintOf)
    .select(['assets.uid', 'assets.mint_tx_id', 'in_flight_mints.tx_id'])
    .where('assets.uid', 'in', assetUids)
    .execute();
  const ids = new Map<string, number>();
  for (const r of rows) {
    const id = r.tx_id ?? r.mint_tx_id;
    if (id !== null) ids.set(r.uid, Number(id));
  }
  return ids;
}
