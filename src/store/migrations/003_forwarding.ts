import type { Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/** Per-user nonces of the ERC-2771 forwarder, handed out by the database like relayer nonces. */
export function forwarding(dialect: Dialect) {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('forwarder_nonces')
        .addColumn('address', 'text', (c) => c.primaryKey())
        .addColumn('next_nonce', big, (c) => c.notNull())
        .addColumn('updated_at', big, (c) => c.notNull())
        .execute();
    },
  };
}
