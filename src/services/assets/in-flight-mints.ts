// An asset's row of in_flight_mints (the mint transaction it is in while its outcome waits), joined by
// the table's key: the asset's collection and token id (migration 030).
import type { JoinBuilder } from 'kysely';
import type { Database } from '../../store/schema.js';

/** `.leftJoin('in_flight_mints', inFlightMintOf)` on a query of assets. */
export function inFlightMintOf<DB, TB extends keyof DB>(j: JoinBuilder<DB, TB>): JoinBuilder<DB, TB> {
  const on = j as unknown as JoinBuilder<Database, 'assets' | 'in_flight_mints'>;
  return on
    .onRef('in_flight_mints.collection_uid', '=', 'assets.collection_uid')
    .onRef('in_flight_mints.token_id', '=', 'assets.token_id') as unknown as JoinBuilder<DB, TB>;
}
