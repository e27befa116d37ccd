import type { Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * Stackable items (ERC-1155 collections).
 * - `collections.standard`: ERC721 (every collection before) or ERC1155; `collections.next_item_mint`
 *   numbers an ERC-1155 collection's mints from 1 (the contract mints each number once).
 * - `items`: an item type of an ERC-1155 collection; its token id comes from the collection's
 *   `next_token_id`. Supplies are decimal text (amounts go up to 2^128 - 1, beyond SQLite's integers):
 *   `accepted_supply` counts accepted mints (pending and done, what the max supply is checked against),
 *   `minted_supply` those the chain confirmed.
 * - `item_mints`, `item_transfers`, `item_burns`: requests of the API, as allocations, transfers and
 *   burns are for rewards and assets.
 * - `item_balances`: per (item, user) the amount the chain holds (read from the chain at `block_number`,
 *   never written from an older read) and the amount reserved by transfers and burns in flight.
 * - `item_deposits`: items that arrived in a user's wallet from outside, one row per log and token id,
 *   so that a range the indexer reads again announces none twice.
 */
export function items(dialect: Dialect) {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .alterTable('collections')
        .addColumn('standard', 'text', (c) => c.notNull().defaultTo('ERC721'))
        .execute();
      await db.schema
        .alterTable('collections')
        .addColumn('next_item_mint', big, (c) => c.notNull().defaultTo(1))
        .execute();

      await db.schema
        .createTable('items')
        .addColumn('uid', 'text', (c) => c.primaryKey())
        .addColumn('app_uid', 'text', (c) => c.notNull().references('apps.uid'))
        .addColumn('collection_uid', 'text', (c) => c.notNull().references('collections.uid'))
        .addColumn('item_external_id', 'text', (c) => c.notNull())
        .addColumn('token_id', big, (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('metadata', 'text', (c) => c.notNull())
        .addColumn('max_supply', 'text')
        .addColumn('accepted_supply', 'text', (c) => c.notNull())
        .addColumn('minted_supply', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('items_item_external_id_uq').on('items').columns(['app_uid', 'item_external_id']).unique().execute();
      await db.schema.createIndex('items_collection_token_uq').on('items').columns(['collection_uid', 'token_id']).unique().execute();
      await db.schema.createIndex('items_collection_created_idx').on('items').columns(['collection_uid', 'created_at']).execute();

      await db.schema
        .createTable('item_mints')
        .addColumn('uid', 'text', (c) => c.primaryKey())
        .addColumn('app_uid', 'text', (c) => c.notNull().references('apps.uid'))
        .addColumn('item_uid', 'text', (c) => c.notNull().references('items.uid'))
        .addColumn('to_user_uid', 'text', (c) => c.notNull().references('users.uid'))
        .addColumn('to_address', 'text', (c) => c.notNull())
        .addColumn('amount', 'text', (c) => c.notNull())
        .addColumn('nonce', 'text', (c) => c.notNull())
        .addColumn('nonce_is_number', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('seq', big, (c) => c.notNull()) // the collection's mint number, the contract's guard
        .addColumn('status', 'text', (c) => c.notNull()) // pending | done | failed
        .addColumn('error', 'text')
        .addColumn('tx_id', big)
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      // The idempotency key: two concurrent mints with one nonce cannot both commit.
      await db.schema.createIndex('item_mints_item_nonce_uq').on('item_mints').columns(['item_uid', 'nonce']).unique().execute();
      await db.schema.createIndex('item_mints_user_idx').on('item_mints').columns(['app_uid', 'to_user_uid', 'created_at']).execute();

      for (const table of ['item_transfers', 'item_burns'] as const) {
        let t = db.schema
          .createTable(table)
          .addColumn('uid', 'text', (c) => c.primaryKey())
          .addColumn('app_uid', 'text', (c) => c.notNull().references('apps.uid'))
          .addColumn('item_uid', 'text', (c) => c.notNull().references('items.uid'))
          .addColumn('from_user_uid', 'text', (c) => c.notNull().references('users.uid'));
        if (table === 'item_transfers') t = t.addColumn('to_address', 'text', (c) => c.notNull());
        await t
          .addColumn('amount', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull()) // pending | done | cancelled
          .addColumn('reason', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex(`${table}_user_idx`).on(table).columns(['app_uid', 'from_user_uid', 'created_at']).execute();
      }

      await db.schema
        .createTable('item_balances')
        .addColumn('item_uid', 'text', (c) => c.notNull().references('items.uid'))
        .addColumn('user_uid', 'text', (c) => c.notNull().references('users.uid'))
        .addColumn('amount', 'text', (c) => c.notNull())
        .addColumn('reserved', 'text', (c) => c.notNull())
        .addColumn('block_number', big, (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('item_balances_pk', ['item_uid', 'user_uid'])
        .execute();
      await db.schema
        .createTable('item_deposits')
        .addColumn('chain_id', big, (c) => c.notNull())
        .addColumn('tx_hash', 'text', (c) => c.notNull())
        .addColumn('log_index', 'integer', (c) => c.notNull())
        .addColumn('token_id', 'text', (c) => c.notNull())
        .addColumn('item_uid', 'text', (c) => c.notNull().references('items.uid'))
        .addColumn('user_uid', 'text', (c) => c.notNull().references('users.uid'))
        .addColumn('from_address', 'text', (c) => c.notNull())
        .addColumn('amount', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('item_deposits_pk', ['chain_id', 'tx_hash', 'log_index', 'token_id'])
        .execute();
      await db.schema.createIndex('item_balances_user_idx').on('item_balances').columns(['user_uid', 'item_uid']).execute();
    },
    async down(db: Kysely<any>): Promise<void> {
      for (const t of ['item_deposits', 'item_balances', 'item_burns', 'item_transfers', 'item_mints', 'items']) await db.schema.dropTable(t).execute();
      await db.schema.alterTable('collections').dropColumn('next_item_mint').execute();
      await db.schema.alterTable('collections').dropColumn('standard').execute();
    },
  };
}
