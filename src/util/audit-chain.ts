// The audit log's hash chain: each entry's hash covers its own content and the hash of the entry
// before it, so an entry edited, removed or slipped in afterwards breaks every link from there on.
// No I/O: the store appends (services/audit.ts) and `mintworks audit verify` checks with these.
import { createHash } from 'node:crypto';

/** The `prev_hash` of the first entry. */
export const GENESIS_HASH = '0'.repeat(64);

/** What an entry's hash covers: every column but the hash itself. */
export interface ChainedEntry {
  seq: number;
  uid: string;
  created_at: string;
  actor: string;
  actor_detail: string | null;
  action: string;
  app_uid: string | null;
  user_uid: string | null;
  chain_id: number | null;
  /** The JSON text as stored. */
  details: string;
}

/** sha-256 (hex) of the previous hash and the entry's columns, in a fixed order (JSON: no ambiguity between fields). */
export function entryHash(prevHash: string, e: ChainedEntry): string {
  const content = JSON.stringify([e.seq, e.uid, e.created_at, e.actor, e.actor_detail, e.action, e.app_uid, e.user_uid, e.chain_id, e.details]);
  return createHash('sha256').update(`${prevHash}\n${content}`).digest('hex');
}

export interface StoredEntry extends ChainedEntry {
  prev_hash: string;
  hash: string;
}

/** The first link that does not hold, and why. */
export interface BrokenLink {
  seq: number;
  /** The entry at that place, or null when the entry is missing. */
  uid: string | null;
  reason: string;
}

/**
 * Checks entries in `seq` order, continuing from `from` (the last checked entry's seq and hash; the
 * genesis for the first). Returns the first broken link, or the new position.
 */
export function checkLinks(
  from: { seq: number; hash: string },
  entries: readonly StoredEntry[],
): { broken: BrokenLink } | { broken: null; seq: number; hash: string } {
  let { seq, hash } = from;
  for (const e of entries) {
    if (e.seq !== seq + 1) {
      return { broken: { seq: seq + 1, uid: null, reason: `entry ${seq + 1} is missing (the next one is ${e.seq}, ${e.uid})` } };
    }
    if (e.prev_hash !== hash) {
      return { broken: { seq: e.seq, uid: e.uid, reason: `entry ${e.seq} (${e.uid}) does not follow entry ${seq}: its previous hash is not that entry's` } };
    }
    if (entryHash(e.prev_hash, e) !== e.hash) {
      return { broken: { seq: e.seq, uid: e.uid, reason: `entry ${e.seq} (${e.uid}) was changed after it was written: its content does not match its hash` } };
    }
    seq = e.seq;
    hash = e.hash;
  }
  return { broken: null, seq, hash };
}
