import type { Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * Rewards (ERC-20 pools), their allocations and claims, and one ledger row per (reward, user).
 * Amounts are base units (18 decimals) as decimal text: SQLite has no 256-bit integers, and text
 * keeps both databases exact. Arithmetic happens in BigInt under a row lock (src/services/rewards.ts).
 */
export function rewards(dialect: Dialect) {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('rewards')
        .addColumn('uid', 'text', (c) => c.primaryKey())
        .addColumn('app_uid', 'text', (c) => c.notNull().references('apps.uid'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('token_name', 'text', (c) => c.notNull())
        .addColumn('token_symbol', 'text', (c) => c.notNull())
        .addColumn('supply', 'text', (c) => c.notNull())
        // The budget still free for allocations: supply minus accepted (pending or done) allocations.
        .addColumn('unallocated', 'text', (c) => c.notNull())
        .addColumn('withdraw_receiver', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('contract_address', 'text')
        .addColumn('withdraw_status', 'text') // null | requested | done
        .addColumn('withdraw_tx_id', big)
        .addColumn('withdrawn_amount', 'text')
        .addColumn('withdrawn_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('rewards_app_created_idx').on('rewards').columns(['app_uid', 'created_at']).execute();

      await db.schema
        .createTable('allocations')
        .addColumn('uid', 'text', (c) => c.primaryKey())
        .addColumn('app_uid', 'text', (c) => c.notNull().references('apps.uid'))
        .addColumn('reward_uid', 'text', (c) => c.notNull().references('rewards.uid'))
        .addColumn('to_user_uid', 'text', (c) => c.notNull().references('users.uid'))
        .addColumn('to_address', 'text', (c) => c.notNull())
        .addColumn('amount', 'text', (c) => c.notNull())
        .addColumn('nonce', 'text', (c) => c.notNull())
        .addColumn('nonce_is_number', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('status', 'text', (c) => c.notNull()) // pending | done | failed
        .addColumn('error', 'text')
        .addColumn('tx_id', big)
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      // The idempotency key: two concurrent allocations with one nonce cannot both commit.
      await db.schema.createIndex('allocations_reward_nonce_uq').on('allocations').columns(['reward_uid', 'nonce']).unique().execute();
      await db.schema.createIndex('allocations_user_idx').on('allocations').columns(['app_uid', 'to_user_uid', 'created_at']).execute();
      await db.schema.createIndex('allocations_reward_user_status_idx').on('allocations').columns(['reward_uid', 'to_user_uid', 'status']).execute();
      await db.schema.createIndex('allocations_reward_status_idx').on('allocations').columns(['reward_uid', 'status']).execute();

      await db.schema
        .createTable('claims')
        .addColumn('uid', 'text', (c) => c.primaryKey())
        .addColumn('app_uid', 'text', (c) => c.notNull().references('apps.uid'))
        .addColumn('reward_uid', 'text', (c) => c.notNull().references('rewards.uid'))
        .addColumn('from_user_uid', 'text', (c) => c.notNull().references('users.uid'))
        .addColumn('to_address', 'text', (c) => c.notNull())
        .addColumn('amount', 'text') // null until done: what the chain paid
        .addColumn('status', 'text', (c) => c.notNull()) // pending | done | failed
        .addColumn('error', 'text')
        .addColumn('tx_id', big) // the chain transaction in flight
        .addColumn('rounds', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('claims_user_idx').on('claims').columns(['app_uid', 'from_user_uid', 'created_at']).execute();
      await db.schema.createIndex('claims_reward_status_idx').on('claims').columns(['reward_uid', 'status']).execute();

      // Per (reward, user): the running sums a balance and a claim are computed from, and the claim
      // holding the user's claim slot (claims of one user are executed one at a time).
      await db.schema
        .createTable('reward_balances')
        .addColumn('reward_uid', 'text', (c) => c.notNull().references('rewards.uid'))
        .addColumn('user_uid', 'text', (c) => c.notNull().references('users.uid'))
        .addColumn('allocated', 'text', (c) => c.notNull()) // accepted: pending + done
        .addColumn('allocated_done', 'text', (c) => c.notNull()) // confirmed on chain
        .addColumn('claimed', 'text', (c) => c.notNull()) // paid out, as the chain reported it
        .addColumn('claim_uid', 'text')
        .addColumn('updated_at', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('reward_balances_pk', ['reward_uid', 'user_uid'])
        .execute();
    },
  };
}
