import type { Kysely } from 'kysely';
import type { Dialect } from '../db.js';

// `serial` ids: SQLite's INTEGER PRIMARY KEY AUTOINCREMENT, PostgreSQL's bigserial.
export function idColumn(dialect: Dialect) {
  return dialect === 'postgres' ? ('bigserial' as const) : ('integer' as const);
}

export function core(dialect: Dialect) {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>): Promise<void> {
      const id = () => (c: any) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement());
      await db.schema
        .createTable('meta')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('apps')
        .addColumn('uid', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('api_keys')
        .addColumn('api_key', 'text', (c) => c.primaryKey())
        .addColumn('app_uid', 'text', (c) => c.notNull().references('apps.uid'))
        .addColumn('secret_sealed', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('revoked_at', 'text')
        .execute();

      await db.schema
        .createTable('users')
        .addColumn('uid', 'text', (c) => c.primaryKey())
        .addColumn('app_uid', 'text', (c) => c.notNull().references('apps.uid'))
        .addColumn('email', 'text')
        .addColumn('user_external_id', 'text')
        .addColumn('wallet_address', 'text')
        .addColumn('wallet_created_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('users_app_email_uq').on('users').columns(['app_uid', 'email']).unique().execute();
      await db.schema.createIndex('users_app_user_external_id_uq').on('users').columns(['app_uid', 'user_external_id']).unique().execute();
      await db.schema.createIndex('users_wallet_address_idx').on('users').column('wallet_address').execute();
      await db.schema.createIndex('users_app_created_idx').on('users').columns(['app_uid', 'created_at']).execute();

      await db.schema
        .createTable('collections')
        .addColumn('uid', 'text', (c) => c.primaryKey())
        .addColumn('app_uid', 'text', (c) => c.notNull().references('apps.uid'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('symbol', 'text')
        .addColumn('description', 'text')
        .addColumn('external_url', 'text')
        .addColumn('editable', 'integer', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('contract_address', 'text')
        .addColumn('next_token_id', big, (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('assets')
        .addColumn('uid', 'text', (c) => c.primaryKey())
        .addColumn('app_uid', 'text', (c) => c.notNull().references('apps.uid'))
        .addColumn('collection_uid', 'text', (c) => c.notNull().references('collections.uid'))
        .addColumn('asset_external_id', 'text', (c) => c.notNull())
        .addColumn('mint_for_user_uid', 'text', (c) => c.notNull().references('users.uid'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('unique_name_key', 'text')
        .addColumn('token_id', big, (c) => c.notNull())
        .addColumn('mint_status', 'text', (c) => c.notNull())
        .addColumn('mint_error', 'text')
        .addColumn('mint_tx_id', big)
        .addColumn('is_burned', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('is_transferring', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('is_editing', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('owner_user_uid', 'text')
        .addColumn('owner_address', 'text')
        .addColumn('mint_for_address', 'text')
        .addColumn('token_uri', 'text')
        .addColumn('sale_price_in_usd', 'text')
        .addColumn('metadata', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('assets_app_asset_external_id_uq').on('assets').columns(['app_uid', 'asset_external_id']).unique().execute();
      await db.schema.createIndex('assets_collection_unique_name_key_uq').on('assets').columns(['collection_uid', 'unique_name_key']).unique().execute();
      await db.schema.createIndex('assets_collection_token_id_uq').on('assets').columns(['collection_uid', 'token_id']).unique().execute();
      await db.schema.createIndex('assets_collection_name_idx').on('assets').columns(['collection_uid', 'name']).execute();
      await db.schema.createIndex('assets_owner_idx').on('assets').columns(['app_uid', 'owner_user_uid', 'created_at']).execute();
      await db.schema.createIndex('assets_mint_tx_idx').on('assets').column('mint_tx_id').execute();

      await db.schema
        .createTable('jobs')
        .addColumn('id', idColumn(dialect), id())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('ref', 'text', (c) => c.notNull())
        .addColumn('group_key', 'text')
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('run_at', big, (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('max_attempts', 'integer', (c) => c.notNull())
        .addColumn('lease_until', big)
        .addColumn('locked_by', 'text')
        .addColumn('last_error', 'text')
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('updated_at', big, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('jobs_claim_idx').on('jobs').columns(['kind', 'status', 'run_at']).execute();
      await db.schema.createIndex('jobs_group_idx').on('jobs').columns(['group_key', 'status']).execute();
      await db.schema.createIndex('jobs_ref_idx').on('jobs').columns(['kind', 'ref']).execute();

      await db.schema
        .createTable('events')
        .addColumn('seq', idColumn(dialect), id())
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('app_uid', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('event_time', 'text', (c) => c.notNull())
        .addColumn('created_at_ms', big, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('events_app_idx').on('events').columns(['app_uid', 'seq']).execute();

      await db.schema
        .createTable('chain_txs')
        .addColumn('id', idColumn(dialect), id())
        .addColumn('chain_id', big, (c) => c.notNull())
        .addColumn('from_address', 'text', (c) => c.notNull())
        .addColumn('nonce', big, (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('ref', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('raw', 'text', (c) => c.notNull())
        .addColumn('hash', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('block_number', big)
        .addColumn('block_hash', 'text')
        .addColumn('gas_used', big)
        .addColumn('contract_address', 'text')
        .addColumn('error', 'text')
        .addColumn('handled', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('updated_at', big, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('chain_txs_from_nonce_uq').on('chain_txs').columns(['chain_id', 'from_address', 'nonce']).unique().execute();
      await db.schema.createIndex('chain_txs_status_idx').on('chain_txs').columns(['status', 'handled']).execute();
      await db.schema.createIndex('chain_txs_ref_idx').on('chain_txs').columns(['kind', 'ref']).execute();

      await db.schema
        .createTable('relayers')
        .addColumn('address', 'text', (c) => c.primaryKey())
        .addColumn('chain_id', big, (c) => c.notNull())
        .addColumn('idx', 'integer', (c) => c.notNull())
        .addColumn('next_nonce', big, (c) => c.notNull())
        .addColumn('updated_at', big, (c) => c.notNull())
        .execute();
    },
  };
}
