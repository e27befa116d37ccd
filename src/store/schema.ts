// Row types of every table. Booleans are stored as 0/1 integers in both databases; timestamps shown to
// API users are ISO strings with microseconds; machine times (leases, schedules) are epoch ms.
import type { Generated } from 'kysely';
import type { AppEnvironment } from '../domain/environment.js';

export interface MetaTable {
  key: string;
  value: string;
}

export interface AppTable {
  uid: string;
  name: string;
  environment: AppEnvironment;
  created_at: string;
}

export interface ApiKeyTable {
  api_key: string;
  app_uid: string;
  secret_sealed: string;
  created_at: string;
  revoked_at: string | null;
}

export interface UserTable {
  uid: string;
  app_uid: string;
  email: string | null; // as given
  email_key: Generated<string | null>; // lower-cased email, unique per App (migration 008); null without email
  user_external_id: string | null;
  wallet_address: string | null; // lower-case hex
  wallet_created_at: string | null;
  created_at: string;
  wallet_exported_at: Generated<string | null>; // migration 017
}

export interface CollectionTable {
  uid: string;
  app_uid: string;
  name: string;
  symbol: string | null;
  description: string | null;
  external_url: string | null;
  editable: number;
  status: 'deploying' | 'deployed' | 'failed';
  contract_address: string | null;
  next_token_id: number;
  created_at: string;
  chain_id: Generated<number>; // migration 012
  // Migration 026: the collection options (ERC-2981 royalty, ERC-5192 soulbound, ERC-7572 contract URI).
  royalty_receiver: string | null;
  royalty_bps: number | null;
  soulbound: Generated<number>;
  image_url: string | null;
  contract_uri: string | null;
  standard: Generated<CollectionStandard>; // migration 027
  next_item_mint: Generated<number>; // migration 027: an ERC-1155 collection's next mint number
}

export type CollectionStandard = 'ERC721' | 'ERC1155';

// Migration 027. Amounts and supplies are decimal text (up to 2^128 - 1).
export interface ItemTable {
  uid: string;
  app_uid: string;
  collection_uid: string;
  item_external_id: string;
  token_id: number;
  name: string;
  metadata: string; // JSON, as assets'
  max_supply: string | null;
  accepted_supply: string;
  minted_supply: string;
  created_at: string;
  updated_at: string;
  store_image: Generated<number>; // migration 028: store_image_on_ipfs as given, 0/1
  token_uri: string | null; // migration 028: ipfs://<cid> of a production App's document; null = the metadata route
}

export interface ItemMintTable {
  uid: string;
  app_uid: string;
  item_uid: string;
  to_user_uid: string;
  to_address: string;
  amount: string;
  nonce: string;
  nonce_is_number: number;
  seq: number;
  status: 'pending' | 'done' | 'failed';
  error: string | null;
  tx_id: number | null;
  created_at: string;
  updated_at: string;
}

export interface ItemBurnTable {
  uid: string;
  app_uid: string;
  item_uid: string;
  from_user_uid: string;
  amount: string;
  status: 'pending' | 'done' | 'cancelled';
  reason: string | null;
  created_at: string;
  updated_at: string;
}

export interface ItemTransferTable extends ItemBurnTable {
  to_address: string;
}

export interface ItemDepositTable {
  chain_id: number;
  tx_hash: string;
  log_index: number;
  token_id: string;
  item_uid: string;
  user_uid: string;
  from_address: string;
  amount: string;
  created_at: string;
}

export interface ItemBalanceTable {
  item_uid: string;
  user_uid: string;
  amount: string;
  reserved: string;
  block_number: number;
  updated_at: string;
}

export interface AssetTable {
  uid: string;
  app_uid: string;
  collection_uid: string;
  asset_external_id: string;
  mint_for_user_uid: string;
  name: string;
  unique_name_key: string | null; // = name when unique_name was true; a unique index guards races
  token_id: number;
  mint_status: 'pending' | 'minted' | 'failed';
  mint_error: string | null;
  mint_tx_id: number | null; // the transaction that minted it (while one is under way: in_flight_mints)
  is_burned: number;
  is_transferring: number;
  is_editing: number;
  owner_user_uid: string | null;
  owner_address: string | null;
  mint_for_address: string | null;
  token_uri: string | null;
  sale_price_in_usd: string | null; // exact decimal text
  metadata: string; // JSON document
  created_at: string;
  updated_at: string;
  is_burning: number;
  pending_edit: string | null; // JSON {metadata, name, unique_name_key} of an edit in flight
  pending_token_uri: Generated<string | null>; // per-token URI to mint with (migration 006); null = baseURI + id
  store_image: Generated<number>; // store_image_on_ipfs at creation, 0/1 (migration 006)
}

// Migration 030. The mint transaction an asset is in while its outcome waits (deleted when applied).
export interface InFlightMintTable {
  collection_uid: string; // with token_id, the key: one mint under way per token
  token_id: number;
  asset_uid: string;
  tx_id: number;
}

export interface JobTable {
  id: Generated<number>;
  kind: string;
  ref: string;
  group_key: string | null;
  payload: string;
  status: 'queued' | 'running' | 'done' | 'failed';
  run_at: number;
  attempts: number;
  max_attempts: number;
  lease_until: number | null;
  locked_by: string | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

export interface EventTable {
  id: string; // uuid, the webhook-id
  seq: Generated<number>;
  app_uid: string;
  type: string;
  payload: string; // JSON of `data`
  event_time: string;
  created_at_ms: number;
}

export interface ChainTxTable {
  id: Generated<number>;
  chain_id: number;
  from_address: string;
  nonce: number;
  kind: string;
  ref: string;
  payload: string;
  raw: string;
  hash: string;
  status: 'signed' | 'sent' | 'mined' | 'reverted';
  block_number: number | null;
  block_hash: string | null;
  gas_used: number | null;
  contract_address: string | null;
  error: string | null;
  handled: number; // 1 once its outcome was applied to the domain rows
  prior_hashes: Generated<string>; // JSON array: hashes this transaction had before it was replaced
  bumps: Generated<number>; // how many times it was re-priced
  awaiting: Generated<string | null>; // migration 025: what its outcome waits for (evidence not given yet)
  created_at: number;
  updated_at: number;
}

export interface RelayerTable {
  address: string;
  chain_id: number;
  idx: number;
  next_nonce: number;
  updated_at: number;
  /** Migration 020: active | pending | retiring | retired (src/chain/relayer-set.ts). */
  state: Generated<RelayerState>;
}

export type RelayerState = 'active' | 'pending' | 'retiring' | 'retired';

// Migration 020. One relayer rotation of a chain (src/services/relayer-rotation.ts).
export interface RelayerRotationTable {
  id: Generated<number>;
  chain_id: number;
  phase: 'granting' | 'draining' | 'revoking' | 'done';
  new_relayers: string; // JSON array of lower-case addresses
  old_relayers: string;
  progress: Generated<string>;
  /** Wei (decimal) the deployer sends each new relayer on an external chain; null: the operator funds them. */
  fund_wei: string | null;
  actor: string;
  actor_detail: string | null;
  created_at: number;
  switched_at: number | null;
  finished_at: number | null;
}

export interface TransferTable {
  uid: string;
  app_uid: string;
  asset_uid: string;
  from_user_uid: string;
  to_address: string;
  status: 'pending' | 'done' | 'cancelled';
  reason: string | null;
  attempts: number;
  created_at: string;
  updated_at: string;
}

export interface BurnTable {
  uid: string;
  app_uid: string;
  asset_uid: string;
  from_user_uid: string;
  status: 'pending' | 'done' | 'cancelled';
  reason: string | null;
  attempts: number;
  created_at: string;
  updated_at: string;
}

export interface ChainCursorTable {
  name: string;
  block_number: number;
  block_hash: string;
  updated_at: number;
}

export interface ForwarderNonceTable {
  chain_id: number;
  address: string;
  next_nonce: number;
  updated_at: number;
}

export interface Database {
  meta: MetaTable;
  apps: AppTable;
  api_keys: ApiKeyTable;
  users: UserTable;
  collections: CollectionTable;
  assets: AssetTable;
  in_flight_mints: InFlightMintTable;
  jobs: JobTable;
  events: EventTable;
  chain_txs: ChainTxTable;
  relayers: RelayerTable;
  forwarder_nonces: ForwarderNonceTable;
  wallets: WalletTable;
  transfers: TransferTable;
  burns: BurnTable;
  items: ItemTable;
  item_mints: ItemMintTable;
  item_transfers: ItemTransferTable;
  item_burns: ItemBurnTable;
  item_balances: ItemBalanceTable;
  item_deposits: ItemDepositTable;
  chain_cursors: ChainCursorTable;
  webhook_endpoints: WebhookEndpointTable;
  webhook_deliveries: WebhookDeliveryTable;
  webhook_attempts: WebhookAttemptTable;
  rewards: RewardTable;
  allocations: AllocationTable;
  claims: ClaimTable;
  reward_balances: RewardBalanceTable;
  rate_limits: RateLimitTable;
  idempotency_keys: IdempotencyKeyTable;
  custody_keys: CustodyKeyTable;
  audit_log: AuditLogTable;
  audit_head: AuditHeadTable;
  operator_attempts: OperatorAttemptsTable;
  relayer_rotations: RelayerRotationTable;
}

// Migration 017. Chain accounts whose key is in the HSM: address and token label, never the key.
export interface CustodyKeyTable {
  label: string;
  role: string; // deployer | relayer
  address: string; // lower-case hex
  created_at: string;
  retired_at: string | null;
}

// Migration 017. Append-only: key and secret events, never pruned.
export interface AuditLogTable {
  uid: string; // time-ordered
  created_at: string;
  actor: 'operator_token' | 'console' | 'cli';
  actor_detail: string | null;
  action: string;
  app_uid: string | null;
  user_uid: string | null;
  chain_id: number | null;
  details: string; // JSON object
  // Migration 023: the hash chain (util/audit-chain.ts).
  seq: number;
  prev_hash: string;
  hash: string;
}

// Migration 023. One row (id 1): the audit chain's last entry. Locked by every append.
export interface AuditHeadTable {
  id: number;
  seq: number;
  hash: string;
}

// Migration 024. Failed operator-token attempts per scope (`ip:…`, `global`), a fixed window each.
export interface OperatorAttemptsTable {
  scope: string;
  window_start: number; // epoch ms
  failures: number;
}

// Migration 008. A fixed-window counter per bucket (`key:<api key>`, `ip:<address>`).
export interface RateLimitTable {
  bucket: string;
  window_start: number; // window number: epoch ms / window length
  hits: number;
}

// The stored first answer to a request with an Idempotency-Key, per App. Times are epoch ms.
export interface IdempotencyKeyTable {
  app_uid: string;
  idem_key: string;
  fingerprint: string; // sha256 of method, path and body
  status_code: number;
  response: string; // the JSON body sent
  created_at_ms: number;
}

// Webhooks (migration 002). Times are epoch ms.
export interface WebhookEndpointTable {
  app_uid: string;
  url: string;
  secret_sealed: string; // `whsec_…`, sealed with the SecretBox
  key_id: string;
  previous_secret_sealed: string | null; // the rotated-out secret, still signed with until previous_valid_until
  previous_key_id: string | null;
  previous_valid_until: number | null;
  enabled: number;
  events_filter: string | null; // JSON array of event types; null = every event
  disabled_reason: string | null;
  version: number; // bumped on every change, so a late 410 from an old URL cannot disable a new one
  created_at: string;
  updated_at: string;
}

export interface WebhookDeliveryTable {
  event_id: string;
  app_uid: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'expired' | 'disabled';
  attempts: number;
  event_time_ms: number;
  deadline_at: number; // event time + 72 h (later after a manual redelivery)
  next_attempt_at: number | null;
  last_attempt_at: number | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: number | null;
  recent_attempts: string; // JSON array of the start times of the last 10 attempts (the hourly cap)
  lease_until: number | null;
  locked_by: string | null;
  created_at_ms: number;
  updated_at_ms: number;
}

export interface WebhookAttemptTable {
  id: Generated<number>;
  event_id: string;
  app_uid: string;
  attempt: number;
  attempted_at: number;
  url: string;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  response_body: string | null; // the first 1 KiB of the response
}

// Rewards (migration 005). Amounts are base units (18 decimals) as decimal text.
export interface RewardTable {
  uid: string;
  app_uid: string;
  name: string;
  description: string | null;
  token_name: string;
  token_symbol: string;
  supply: string;
  unallocated: string; // supply minus accepted allocations: the budget left
  withdraw_receiver: string; // lower-case hex
  status: 'deploying' | 'deployed';
  contract_address: string | null;
  withdraw_status: 'requested' | 'done' | null;
  withdraw_tx_id: number | null;
  withdrawn_amount: string | null;
  withdrawn_at: string | null;
  created_at: string;
  chain_id: Generated<number>; // migration 012
}

// A user's wallet on one chain (migration 012): the same derived address on every chain, a row each.
export interface WalletTable {
  user_uid: string;
  chain_id: number;
  address: string; // lower-case hex
  created_at: string;
}

export interface AllocationTable {
  uid: string;
  app_uid: string;
  reward_uid: string;
  to_user_uid: string;
  to_address: string; // the user's wallet, lower-case hex
  amount: string;
  nonce: string;
  nonce_is_number: number; // 1 when the client sent a JSON number (echoed back as one)
  status: 'pending' | 'done' | 'failed';
  error: string | null;
  tx_id: number | null;
  created_at: string;
  updated_at: string;
}

export interface ClaimTable {
  uid: string;
  app_uid: string;
  reward_uid: string;
  from_user_uid: string;
  to_address: string; // lower-case hex
  amount: string | null; // what the chain paid; null until done
  status: 'pending' | 'done' | 'failed';
  error: string | null;
  tx_id: number | null;
  rounds: number;
  created_at: string;
  updated_at: string;
}

export interface RewardBalanceTable {
  reward_uid: string;
  user_uid: string;
  allocated: string; // accepted allocations (pending + done)
  allocated_done: string; // allocations confirmed on chain
  claimed: string; // paid out by claims, as the chain's Claimed events reported
  claim_uid: string | null; // the claim holding this user's claim slot
  updated_at: number;
}
