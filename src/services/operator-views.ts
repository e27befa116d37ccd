// What the operator sees of the installation, as the services that build it answer it: the chains, their
// relayers and transactions, the audit log and its check, chain verifications, wallet exports. Shared by
// the management API, the CLI and the console (its contract, src/services/console/types.ts, re-exports
// them). Type-only, without imports: the console's browser bundle takes nothing from here.

/** A relayer (or the deployer) of a chain as the operator sees it. */
export interface ChainRelayer {
  address: string;
  role: 'relayer' | 'deployer';
  /** A relayer's place in its chain's set (docs/custody.md, Rotating the relayers); absent for the deployer. */
  state?: 'active' | 'pending' | 'retiring' | 'retired';
  balance_wei: string | null;
  low: boolean;
  /** Transactions of the account mined on chain (its confirmed nonce). */
  nonce: number | null;
  /** The node's count including its pool. */
  pending_nonce: number | null;
  /** The next nonce Mintworks will sign with. */
  next_nonce: number | null;
  /** Recorded transactions of the account not yet confirmed (signed or sent). */
  in_flight: number;
}

/** One chain as the operator sees it (GET /console/api/ops/chains/:id, the same as /admin/v1/chains/:id). */
export interface ChainOverview {
  chain_id: number;
  name: string;
  /** Symbol of the native currency (balances are in its wei). */
  currency: string;
  embedded: boolean;
  ready: boolean | null;
  status: string;
  head: number | null;
  base_fee_gwei: number | null;
  max_fee_gwei: number | null;
  low_balance_wei: string;
  providers: {
    provider: string;
    state: string;
    calls: number;
    errors: number;
    latency_ms: number | null;
    last_error: string | null;
    since: string | null;
    retry_at?: string;
  }[];
  relayers: ChainRelayer[];
  unconfirmed_transactions: number;
  stuck_transactions: number;
}

/** A chain transaction not confirmed yet (GET /console/api/ops/chains/:id/transactions). */
export interface ChainTxRow {
  id: number;
  chain_id: number;
  kind: string;
  ref: string;
  from: string;
  nonce: number;
  hash: string;
  /** signed: recorded, not yet accepted by a node; sent: in a node's pool, not mined (or not confirmed). */
  status: string;
  stuck: boolean;
  replacements: number;
  max_fee_gwei: number | null;
  tip_gwei: number | null;
  age_s: number;
  created_at: string;
  cancellable: boolean;
  /** Cancelled by the operator, the cancellation not mined yet. */
  cancelling: boolean;
  /** What its outcome waits for (a receipt not served, the holder of its nonce not proved), or null. */
  awaiting: string | null;
}

/** An audit log entry (src/services/audit.ts). */
export interface AuditEntry {
  uid: string;
  created_at: string;
  actor: string;
  actor_detail: string | null;
  action: string;
  app_uid: string | null;
  user_uid: string | null;
  chain_id: number | null;
  details: Record<string, unknown>;
  /** The entry's place in the hash chain and its hash (docs/custody.md, Audit log). */
  seq: number;
  hash: string;
}

/** GET /audit/verify: the audit chain checked from its first entry (src/services/audit.ts). */
export interface AuditCheck {
  ok: boolean;
  entries: number;
  head: { seq: number; hash: string };
  broken: { seq: number; uid: string | null; reason: string } | null;
  checked_at: string;
}

/** POST …/wallet-export: the wallet key sealed (HPKE) to the recipient's key. */
export interface WalletExport {
  address: string;
  enc: string;
  ciphertext: string;
}

/** A record that disagrees with the chain, with both sides (POST /console/api/ops/chains/:id/verify; the CLI's `chain verify --json`). */
export interface ChainDivergence {
  kind: string;
  app_uid: string;
  record: { type: string; uid: string };
  field: string;
  recorded: string | number | boolean | null;
  on_chain: string | number | boolean | null;
  fixable: boolean;
  chain_id: number;
  /** With a fix: fixed; changed (the row changed meanwhile: verify again); not_fixable. */
  fixed?: 'fixed' | 'changed' | 'not_fixable';
}

/** A verification of a chain's records: the divergences, and the records checked, in flight and not read, by kind. */
export interface ChainVerifyReport {
  divergences: ChainDivergence[];
  checked: Record<string, number>;
  in_flight: Record<string, number>;
  unverified: Record<string, number>;
}
