// The relayers of one chain as the database holds them (migration 020): each with its state.
//   active    takes new work (mints, relayed requests, deployments, …)
//   pending   brought in by a rotation: an operator of new contracts, not yet given work
//   retiring  sends nothing new; what it has in flight is still repriced, replaced or cancelled by it
//   retired   an operator nowhere any more; kept for the record
// Every process reads the set again every RELAYER_SET_RELOAD_MS, which is how a running service
// follows a rotation (src/services/relayer-rotation.ts) without a restart; the rotation waits long
// enough between its steps for every process to have read the previous one.
import type { Db, DbOrTx } from '../store/db.js';
import type { RelayerState } from '../store/schema.js';
import type { KeyRing } from './keys.js';
import type { ChainSigner } from './signer.js';

/** How often a process reads its chains' relayer sets again. */
export const RELAYER_SET_RELOAD_MS = 2000;
/** Long enough for every running process to have read the relayer set at least once more. */
export const RELAYER_SET_PROPAGATION_MS = 3 * RELAYER_SET_RELOAD_MS + 500;

export interface RelayerEntry {
  index: number;
  address: string; // lower case
  state: RelayerState;
  signer: ChainSigner;
}

/** The relayer rows of a chain (system accounts such as the deployer, idx -1, are not relayers). */
export function relayerRows(db: DbOrTx, chainId: number) {
  return (db as Db).selectFrom('relayers').select(['address', 'idx', 'state']).where('chain_id', '=', chainId).where('idx', '>=', 0).orderBy('idx').execute();
}

export class RelayerSet {
  private entries: RelayerEntry[];
  private loadedAt = 0;
  private loading: Promise<void> | null = null;

  /** Before the first reading: the first `initialCount` relayers, active (what the configuration says). */
  constructor(
    private readonly db: Db,
    private readonly keys: KeyRing,
    private readonly chainId: number,
    initialCount: number,
    private readonly onError: (err: Error) => void = () => {},
  ) {
    this.entries = Array.from({ length: initialCount }, (_, i) => {
      const signer = keys.relayer(i);
      return { index: i, address: signer.address.toLowerCase(), state: 'active' as const, signer };
    });
  }

  /** Reads the set from the database now. */
  async load(): Promise<void> {
    const rows = await relayerRows(this.db, this.chainId);
    const next: RelayerEntry[] = [];
    for (const r of rows) {
      const signer = await this.keys.relayerAt(Number(r.idx));
      if (signer.address.toLowerCase() !== r.address.toLowerCase())
        throw new Error(`relayer ${r.idx} of chain ${this.chainId} is recorded as ${r.address}, but its key is ${signer.address}`);
      next.push({ index: Number(r.idx), address: r.address.toLowerCase(), state: r.state, signer });
    }
    if (next.some((e) => e.state === 'active')) this.entries = next;
    this.loadedAt = Date.now();
  }

  /** Reads the set again in the background when the last reading is older than RELAYER_SET_RELOAD_MS. */
  private freshen(): void {
    if (this.loading || Date.now() - this.loadedAt < RELAYER_SET_RELOAD_MS) return;
    this.loading = this.load()
      .catch((err: Error) => this.onError(err))
      .finally(() => (this.loading = null));
  }

  /** Those that take new work. */
  active(): ChainSigner[] {
    this.freshen();
    return this.entries.filter((e) => e.state === 'active').map((e) => e.signer);
  }

  /** Those a contract deployed now names as operators: the active ones and those a rotation brings in. */
  operators(): ChainSigner[] {
    this.freshen();
    return this.entries.filter((e) => e.state === 'active' || e.state === 'pending').map((e) => e.signer);
  }

  /** Every relayer that may still have to sign (a replacement, a cancellation): all but the retired. */
  signers(): ChainSigner[] {
    this.freshen();
    return this.entries.filter((e) => e.state !== 'retired').map((e) => e.signer);
  }

  /** Every relayer of the chain with its state (for the operator's views). */
  all(): readonly RelayerEntry[] {
    this.freshen();
    return this.entries;
  }

  /**
   * The database refused new work for `address` (a rotation retired it after the last reading): it is
   * taken out of the active ones here at once, and the set is read again soon.
   */
  demote(address: string): void {
    const a = address.toLowerCase();
    this.entries = this.entries.map((e) => (e.address === a && e.state === 'active' ? { ...e, state: 'retiring' } : e));
    this.loadedAt = 0;
  }
}

/**
 * Registers a chain's first `count` relayers (an upsert: processes starting together may race here).
 * A chain never rotated has the first RELAYER_COUNT relayers (raising the setting adds some); once
 * rotated, its set is the database's alone. One statement: another process reading the set meanwhile
 * sees all of them or none (a part would be taken as the whole set until its next reading, and /health
 * would list only that part's accounts to fund).
 */
export async function registerRelayers(db: Db, keys: KeyRing, chainId: number, count: number): Promise<void> {
  if (count <= 0) return;
  const rotated = await db.selectFrom('relayer_rotations').select('id').where('chain_id', '=', chainId).executeTakeFirst();
  if (rotated) return;
  const t = Date.now();
  await db
    .insertInto('relayers')
    .values(
      Array.from({ length: count }, (_, i) => ({ address: keys.relayer(i).address.toLowerCase(), chain_id: chainId, idx: i, next_nonce: 0, updated_at: t })),
    )
    .onConflict((oc) => oc.columns(['chain_id', 'address']).doNothing())
    .execute();
}
