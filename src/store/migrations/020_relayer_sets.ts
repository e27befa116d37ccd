import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.js';

/**
 * The relayer set of each chain becomes state in the database (docs/custody.md, Rotating the relayers):
 * - `relayers.state`: `active` (takes new work), `pending` (brought in by a rotation, not yet an
 *   operator everywhere), `retiring` (sends nothing new; its transactions in flight finish), `retired`.
 *   Every relayer an installation had before keeps working: the default is `active`. The rows of the
 *   deployer and other system accounts (idx -1) carry it too and ignore it.
 * - `relayer_rotations`: one row per `mintworks keys rotate-relayers`: its phase, the relayers it brings
 *   in and retires, what it waits for (`progress`), who started it. At most one unfinished per chain.
 */
export function relayerSets(dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .alterTable('relayers')
        .addColumn('state', 'text', (c) => c.notNull().defaultTo('active'))
        .execute();
      await db.schema
        .createTable('relayer_rotations')
        .addColumn('id', dialect === 'postgres' ? 'bigserial' : 'integer', (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('chain_id', 'integer', (c) => c.notNull())
        .addColumn('phase', 'text', (c) => c.notNull())
        .addColumn('new_relayers', 'text', (c) => c.notNull()) // JSON: lower-case addresses
        .addColumn('old_relayers', 'text', (c) => c.notNull())
        .addColumn('progress', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('fund_wei', 'text') // on an external chain: what the deployer sends each new relayer (null: the operator funds them)
        .addColumn('actor', 'text', (c) => c.notNull())
        .addColumn('actor_detail', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('switched_at', 'bigint')
        .addColumn('finished_at', 'bigint')
        .execute();
      // At most one unfinished rotation per chain, whoever starts a second one at the same moment.
      await db.schema
        .createIndex('relayer_rotations_unfinished_idx')
        .unique()
        .on('relayer_rotations')
        .column('chain_id')
        .where(sql.ref('finished_at'), 'is', null)
        .execute();
    },
  };
}
