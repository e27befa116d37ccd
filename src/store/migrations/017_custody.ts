import type { Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * - `custody_keys`: the chain accounts whose keys live in an HSM (KEY_CUSTODY=pkcs11), by token label:
 *   the address and the label only (the key never leaves the token). Rows are retired, never deleted.
 * - `audit_log`: who did what with keys and secrets. Append-only: nothing updates or deletes its rows,
 *   retention included.
 * - `users.wallet_exported_at`: when the user's wallet key was last handed to them.
 */
export function custody(_dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('custody_keys')
        .addColumn('label', 'text', (c) => c.primaryKey())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('address', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('retired_at', 'text')
        .execute();
      await db.schema
        .createTable('audit_log')
        .addColumn('uid', 'text', (c) => c.primaryKey())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('actor', 'text', (c) => c.notNull())
        .addColumn('actor_detail', 'text')
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('app_uid', 'text')
        .addColumn('user_uid', 'text')
        .addColumn('chain_id', 'integer')
        .addColumn('details', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('audit_log_created_idx').on('audit_log').columns(['created_at', 'uid']).execute();
      await db.schema.alterTable('users').addColumn('wallet_exported_at', 'text').execute();
    },
  };
}
