import type { Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/** Transfers, burns, edits in flight, and the chain indexer's cursor. */
export function lifecycle(dialect: Dialect) {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .alterTable('assets')
        .addColumn('is_burning', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('assets').addColumn('pending_edit', 'text').execute(); // JSON of the edit in flight
      for (const table of ['transfers', 'burns'] as const) {
        let t = db.schema
          .createTable(table)
          .addColumn('uid', 'text', (c) => c.primaryKey())
          .addColumn('app_uid', 'text', (c) => c.notNull().references('apps.uid'))
          .addColumn('asset_uid', 'text', (c) => c.notNull().references('assets.uid'))
          .addColumn('from_user_uid', 'text', (c) => c.notNull().references('users.uid'));
        if (table === 'transfers') t = t.addColumn('to_address', 'text', (c) => c.notNull());
        await t
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('reason', 'text')
          .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex(`${table}_from_idx`).on(table).columns(['app_uid', 'from_user_uid', 'created_at']).execute();
        await db.schema.createIndex(`${table}_asset_idx`).on(table).column('asset_uid').execute();
      }
      await db.schema
        .createTable('chain_cursors')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('block_number', big, (c) => c.notNull())
        .addColumn('block_hash', 'text', (c) => c.notNull())
        .addColumn('updated_at', big, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('collections_contract_idx').on('collections').column('contract_address').execute();
    },
  };
}
