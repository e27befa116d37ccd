import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * `in_flight_mints`: the mint transaction each asset is in while its outcome waits, one row per asset,
 * written with the transaction's record and deleted when its outcome is applied (the asset's own
 * `mint_tx_id` is set then, for good, or cleared for a retry).
 *
 * Before, recording a mint updated every asset of the batch (`mint_tx_id`). On PostgreSQL that update
 * could not stay on the row's page (an asset's page is full from its insert), so each asset got a new
 * row version and a new entry in every one of its dozen indexes: 22 ms for a batch of 430, against 4 ms
 * for these rows. On SQLite the update rewrote each asset's row (and ran the cached reads' trigger on
 * it) for a change no reader of the asset sees.
 *
 * Keyed by the token (collection and token id, unique as the asset is), not by the asset's uid: a
 * batch's tokens were numbered in a row at their creation, so its rows go in at the end of the key's
 * b-tree and leave as one range, where uids (random) wrote a page of it each (SQLite: 5.4 against 15 ms
 * per 5,000 tokens in and out). SQLite: a table without rowid, its rows kept in the key's own b-tree.
 */
export function inFlightMints(dialect: Dialect) {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>): Promise<void> {
      const table = db.schema
        .createTable('in_flight_mints')
        .addColumn('collection_uid', 'text', (c) => c.notNull())
        .addColumn('token_id', big, (c) => c.notNull())
        .addColumn('asset_uid', 'text', (c) => c.notNull())
        .addColumn('tx_id', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('in_flight_mints_pk', ['collection_uid', 'token_id']);
      await (dialect === 'sqlite' ? table.modifyEnd(sql`without rowid`) : table).execute();
      // Assets recorded in a mint transaction by the code before, whose outcome still waits.
      await sql`insert into in_flight_mints (collection_uid, token_id, asset_uid, tx_id)
        select a.collection_uid, a.token_id, a.uid, a.mint_tx_id from assets a join chain_txs t on t.id = a.mint_tx_id
        where a.mint_status = 'pending' and t.handled = 0`.execute(db);
    },
    async down(db: Kysely<any>): Promise<void> {
      // The code before reads the link from the asset.
      await sql`update assets set mint_tx_id = (select f.tx_id from in_flight_mints f where f.asset_uid = assets.uid)
        where uid in (select asset_uid from in_flight_mints)`.execute(db);
      await db.schema.dropTable('in_flight_mints').execute();
    },
  };
}
