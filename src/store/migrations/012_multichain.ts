import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * Several chains in one database.
 * - `collections.chain_id`, `rewards.chain_id`: the chain a contract lives on, chosen at creation.
 * - `wallets`: a user's wallet per chain (the address is the same derived key on every EVM chain; the
 *   row, its creation time and its `user.wallet_created` event are per chain). `users.wallet_address`
 *   stays: the user's derived address once any wallet exists, which is what address lookups need.
 * - `relayers` and `forwarder_nonces` are keyed by (chain, address): the same relayer key has one nonce
 *   stream per chain, and a user's forwarder nonces are counted per chain.
 *
 * Existing rows belong to the chain the database served until now: the `chain_id` it recorded in
 * `meta`, or (a database no service has started on yet) the configured default chain.
 */
export function multichain(dialect: Dialect, defaultChainId: number) {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>): Promise<void> {
      const run = async (tx: Kysely<any>) => {
        const recorded = await tx.selectFrom('meta').select('value').where('key', '=', 'chain_id').executeTakeFirst();
        const home = recorded ? Number(recorded.value) : defaultChainId;
        if (!Number.isSafeInteger(home) || home <= 0) throw new Error(`meta.chain_id is not a chain id: ${recorded?.value}`);
        // The chain the existing rows belong to is recorded now, so that every process agrees on it.
        if (!recorded)
          await tx
            .insertInto('meta')
            .values({ key: 'chain_id', value: String(home) })
            .execute();

        await tx.schema
          .alterTable('collections')
          .addColumn('chain_id', big, (c) => c.notNull().defaultTo(home))
          .execute();
        await tx.schema
          .alterTable('rewards')
          .addColumn('chain_id', big, (c) => c.notNull().defaultTo(home))
          .execute();
        // The indexer reads each chain's deployed collections.
        await tx.schema.createIndex('collections_chain_status_idx').on('collections').columns(['chain_id', 'status']).execute();

        await tx.schema
          .createTable('wallets')
          .addColumn('user_uid', 'text', (c) => c.notNull().references('users.uid'))
          .addColumn('chain_id', big, (c) => c.notNull())
          .addColumn('address', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('wallets_pk', ['user_uid', 'chain_id'])
          .execute();
        await tx
          .insertInto('wallets')
          .columns(['user_uid', 'chain_id', 'address', 'created_at'])
          .expression((eb) =>
            eb
              .selectFrom('users')
              .select(['uid', sql.lit(home).as('chain_id'), 'wallet_address', sql<string>`coalesce(wallet_created_at, created_at)`.as('created_at')])
              .where('wallet_address', 'is not', null),
          )
          .execute();

        await tx.schema
          .createTable('relayers_new')
          .addColumn('chain_id', big, (c) => c.notNull())
          .addColumn('address', 'text', (c) => c.notNull())
          .addColumn('idx', 'integer', (c) => c.notNull())
          .addColumn('next_nonce', big, (c) => c.notNull())
          .addColumn('updated_at', big, (c) => c.notNull())
          .addPrimaryKeyConstraint('relayers_chain_address_pk', ['chain_id', 'address'])
          .execute();
        await tx
          .insertInto('relayers_new')
          .columns(['chain_id', 'address', 'idx', 'next_nonce', 'updated_at'])
          .expression((eb) => eb.selectFrom('relayers').select(['chain_id', 'address', 'idx', 'next_nonce', 'updated_at']))
          .execute();
        await tx.schema.dropTable('relayers').execute();
        await tx.schema.alterTable('relayers_new').renameTo('relayers').execute();

        await tx.schema
          .createTable('forwarder_nonces_new')
          .addColumn('chain_id', big, (c) => c.notNull())
          .addColumn('address', 'text', (c) => c.notNull())
          .addColumn('next_nonce', big, (c) => c.notNull())
          .addColumn('updated_at', big, (c) => c.notNull())
          .addPrimaryKeyConstraint('forwarder_nonces_chain_address_pk', ['chain_id', 'address'])
          .execute();
        await tx
          .insertInto('forwarder_nonces_new')
          .columns(['chain_id', 'address', 'next_nonce', 'updated_at'])
          .expression((eb) => eb.selectFrom('forwarder_nonces').select([sql.lit(home).as('chain_id'), 'address', 'next_nonce', 'updated_at']))
          .execute();
        await tx.schema.dropTable('forwarder_nonces').execute();
        await tx.schema.alterTable('forwarder_nonces_new').renameTo('forwarder_nonces').execute();
      };
      if (db.isTransaction) await run(db);
      else await db.transaction().execute(run);
    },
  };
}
