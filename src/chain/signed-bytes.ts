// The signed bytes of the transactions the tracker follows, read once per hash. The tracker reads its
// rows every pass (every block, on the embedded chain many times a second); a mint's signed bytes run to
// 100 KB and more, and reading them with every pass put megabytes a second through the workers' heap,
// most of it kept into the old generation by the receipt lookups in between. A hash's bytes never change
// (a replacement is signed under a new hash), so they are read when a hash is first seen and kept while
// its transaction is followed.
import type { Db } from '../store/db.js';
import type { SignedTx } from './outcomes.js';
import { UNHANDLED } from './unhandled.js';

/** Every column of a transaction the tracker follows but its payload and signed bytes. */
export const TRACKED_COLUMNS = [
  'id',
  'chain_id',
  'from_address',
  'nonce',
  'kind',
  'ref',
  'hash',
  'status',
  'block_number',
  'block_hash',
  'gas_used',
  'contract_address',
  'error',
  'handled',
  'prior_hashes',
  'bumps',
  'awaiting',
  'created_at',
  'updated_at',
] as const;

/** A tracked row as read each pass: without its signed bytes. */
export type TrackedRow = Omit<SignedTx, 'raw'>;

export class SignedBytes {
  /** The bytes of the hashes the last pass followed. */
  private byHash = new Map<string, string>();

  constructor(private readonly db: Db) {}

  /**
   * The rows with their signed bytes, in their order. A row of a hash not seen before is read again
   * whole (bytes and all), so a replacement another worker made between the two reads comes with its
   * own hash; a row handled meanwhile is left out of this pass.
   */
  async complete(rows: TrackedRow[]): Promise<SignedTx[]> {
    const unseen = rows.filter((r) => !this.byHash.has(r.hash)).map((r) => r.id);
    const fresh = new Map<number, SignedTx>();
    if (unseen.length) {
      const read = await this.db
        .selectFrom('chain_txs')
        .select([...TRACKED_COLUMNS, 'raw'])
        .where('id', 'in', unseen)
        .where('handled', '=', UNHANDLED)
        .execute();
      for (const r of read) fresh.set(r.id, r);
    }
    const out: SignedTx[] = [];
    const kept = new Map<string, string>();
    for (const r of rows) {
      const known = this.byHash.get(r.hash);
      const row = fresh.get(r.id) ?? (known === undefined ? undefined : { ...r, raw: known });
      if (!row) continue;
      kept.set(row.hash, row.raw);
      out.push(row);
    }
    this.byHash = kept; // what is no longer followed is let go
    return out;
  }
}
