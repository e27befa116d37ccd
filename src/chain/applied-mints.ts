// Mint transactions whose outcome this process applied, for the indexer. The indexer reads every
// Transfer log of the collections, the service's own mints too: a drain of thousands of mints is
// thousands of logs per range, and for each it read the token's row only to find that the database
// already agrees. A mint transaction is here when its outcome marked every token its receipt shows
// minted as minted and owned by the address it was minted to, which is all the indexer would have
// checked. A hint, not a record: a log whose transaction is not here (applied by another process, the
// hint dropped, a range read again after a reorg) is checked as before.
import type { MintItem } from './outcomes.js';
import type { RpcLog } from './transfer-logs.js';
import { setBounded } from '../util/bounded-map.js';

/** Hashes kept at most: a mint transaction carries hundreds of tokens, and the indexer drops those it has read. */
const MAX_HASHES = 1024;
/** The topic of the zero address: a Transfer from it is a mint. */
const ZERO_TOPIC = `0x${'0'.repeat(64)}`;

export class AppliedMints {
  /** Transaction hash -> the collection contract it minted on, both lower case, oldest first. */
  private readonly contractOf = new Map<string, string>();

  /** The mints of transaction `hash` on `contract` are marked in the database as its logs show them. */
  add(hash: string, contract: string): void {
    const h = hash.toLowerCase();
    this.contractOf.delete(h);
    setBounded(this.contractOf, h, contract.toLowerCase(), MAX_HASHES);
  }

  /** Whether `log` is a mint (a Transfer from the zero address) of such a transaction, on its contract. */
  covers(log: RpcLog): boolean {
    if (!log.transactionHash || log.removed || log.topics[1] !== ZERO_TOPIC) return false;
    return this.contractOf.get(log.transactionHash.toLowerCase()) === log.address.toLowerCase();
  }

  /** Drops the hashes of a range the indexer has read (read again after a reorg, its logs are checked). */
  forget(hashes: Iterable<string>): void {
    for (const h of hashes) this.contractOf.delete(h.toLowerCase());
  }

  get size(): number {
    return this.contractOf.size;
  }
}

/**
 * Whether a mint outcome marked every token its receipt shows minted (`mintedHere`), each owned by the
 * address it was minted to: then the indexer, reading the same logs, would find nothing to change.
 * `marked`: the rows the outcome's mark changed (a token already marked before is not among them).
 */
export function markedAsLogged(
  items: readonly MintItem[],
  mintedHere: ReadonlySet<number>,
  marked: readonly { uid: string; owner_address: string | null }[],
): boolean {
  if (mintedHere.size === 0) return false;
  const ownerOf = new Map(marked.map((a) => [a.uid, a.owner_address?.toLowerCase()]));
  return items.every((i) => !mintedHere.has(i.token_id) || ownerOf.get(i.asset_uid) === i.to.toLowerCase());
}
