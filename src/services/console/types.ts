// What the console's JSON API (/console/api) answers, shared by the server (src/http/console/) and
// the browser app (console/src): type-only, so the browser bundle takes nothing from here; its only
// import is the webhook view the management API shows too (itself without imports).
// Every answer is wrapped in the API's envelope: { success: true, data: <one of these> }.
import type { WebhookView } from '../../domain/webhook-view.js';
import type { AppEnvironment } from '../../domain/environment.js';

/** A page of a list read newest first; `next_cursor` asks for the page after it (null: the last page). */
export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export interface SessionInfo {
  signed_in: boolean;
  expires_at: string | null;
}

export type Environment = AppEnvironment;

export interface AppSummary {
  uid: string;
  name: string;
  environment: Environment;
  created_at: string;
  api_key: string | null;
}

/** A new App, or a rotated secret: the secret is shown this once. */
export interface AppCredentials {
  uid: string;
  api_key: string;
  api_secret: string;
}

export interface AppCounts {
  users: number;
  collections: number;
  assets: number;
  assets_minted: number;
  assets_pending: number;
  assets_failed: number;
  assets_burned: number;
  transfers: number;
  transfers_pending: number;
  burns: number;
  rewards: number;
  allocations: number;
  claims: number;
  webhook_failing: number;
}

export interface Overview {
  app: AppSummary;
  counts: AppCounts;
}

export type ActivityRange = '24h' | '30d';

export interface Activity {
  range: ActivityRange;
  bucket: 'hour' | 'day';
  /** One point per bucket, oldest first; `t` is the bucket's start (ISO). By the assets' creation time. */
  points: { t: string; mints: number; sales_usd: number }[];
}

export interface ChainStatus {
  status: string;
  ready: boolean;
  chain: { chain_id: number; name: string; block: number | null; embedded: boolean };
  relayers: { address: string; balance_wei: string; low: boolean }[];
  unconfirmed_transactions: number;
  jobs: Record<string, number>;
}

/** A chain new collections can be deployed on (the default one first). */
export interface ChainOption {
  chain_id: number;
  name: string;
}

export interface Wallet {
  address: string;
  explorer_url: string;
}

export interface UserRow {
  uid: string;
  email: string | null;
  user_external_id: string | null;
  wallets: Wallet[];
  created_at: string;
  /** When the wallet key was last exported to the user (null: never). */
  wallet_exported_at: string | null;
}

export type AssetStatus = 'not_minted' | 'minted' | 'transferring' | 'burning' | 'burned' | 'failed';

export interface AssetRow {
  uid: string;
  name: string;
  asset_external_id: string;
  /** The metadata's image as a URL the console can show (ipfs:// mapped to this service's gateway), or null. */
  image: string | null;
  /** Fixed at creation: the token id the asset is (or will be) minted with. */
  token_id: number;
  collection_uid: string;
  collection_name: string;
  owner_user_uid: string | null;
  owner_address: string | null;
  status: AssetStatus;
  error: string | null;
  created_at: string;
}

export interface TxRow {
  kind: string;
  hash: string;
  status: string;
  block_number: number | null;
  from: string;
  explorer_url: string;
  error: string | null;
  time: string;
}

export interface HistoryItem {
  time: string;
  event: string;
  detail: string | null;
}

export interface AssetDetail {
  asset: AssetRow & {
    metadata: Record<string, unknown>;
    token_uri: string | null;
    mint_for_user_uid: string;
    sale_price_in_usd: number | null;
    explorer_url: string | null;
  };
  collection: { uid: string; name: string; contract_address: string | null; explorer_url: string | null };
  transactions: TxRow[];
  history: HistoryItem[];
}

export interface TransferRow {
  uid: string;
  asset_uid: string;
  from_user_uid: string;
  to_address: string;
  created_at: string;
  status: string;
  reason?: string | null;
}

export interface BurnRow {
  uid: string;
  asset_uid: string;
  from_user_uid: string;
  created_at: string;
  status: string;
}

export interface AllocationRow {
  uid: string;
  reward_uid: string;
  to_user_uid: string;
  amount: number;
  nonce: string | number;
  created_at: string;
  status: string;
  reason?: string;
}

export interface ClaimRow {
  uid: string;
  reward_uid: string;
  from_user_uid: string;
  to_address: string | null;
  amount: number;
  created_at: string;
  status: string;
  reason?: string;
}

export interface UserDetail {
  user: UserRow;
  assets: AssetRow[];
  transfers: TransferRow[];
  burns: BurnRow[];
  allocations: AllocationRow[];
  claims: ClaimRow[];
}

export interface CollectionRow {
  uid: string;
  name: string;
  symbol: string | null;
  description: string | null;
  editable_assets: boolean;
  status: 'deploying' | 'deployed';
  contract_address: string | null;
  explorer_url: string | null;
  created_at: string;
  soulbound: boolean;
  royalty_receiver: string | null;
  royalty_bps: number | null;
  image_url: string | null;
  external_url: string | null;
  contract_uri: string | null;
  /** ERC721 (assets) or ERC1155 (items). */
  type: 'ERC721' | 'ERC1155';
}

/**
 * An item of an ERC-1155 collection on the console. Amounts as the API writes them: numbers up to
 * 2^53 - 1, decimal strings beyond.
 */
export interface ItemRowView {
  uid: string;
  collection_uid: string;
  item_external_id: string;
  token_id: number;
  name: string;
  token_uri: string;
  max_supply: number | string | null;
  minted_supply: number | string;
  created_at: string;
  metadata: Record<string, unknown>;
}

export interface ItemMintRowView {
  uid: string;
  item_uid: string;
  to_user_uid: string;
  amount: number | string;
  nonce: number | string;
  created_at: string;
  status: 'pending' | 'done' | 'failed';
  reason?: string;
}

/** One item's page: the item, its collection's name, its newest mints and who holds it. */
export interface ItemDetail {
  item: ItemRowView;
  collection_name: string;
  mints: ItemMintRowView[];
  holders: { user_uid: string; amount: number | string }[];
}

/** What a user holds of one item (amount > 0), with the item's name. */
export interface ItemHolding {
  item_uid: string;
  name: string;
  collection_uid: string;
  token_id: number;
  amount: number | string;
}

export interface RewardRow {
  uid: string;
  name: string;
  status: 'deploying' | 'deployed';
  token_name: string;
  token_symbol: string;
  supply: string;
  unallocated: string;
  contract_address: string | null;
  explorer_url: string | null;
  withdraw_receiver: string | null;
  withdraw_status: 'requested' | 'done' | null;
  withdrawn_amount: string | null;
  withdrawn_at: string | null;
  description: string | null;
  created_at: string;
}

export interface WebhookConfig extends WebhookView {
  /** Only when created or rotated: shown once. */
  secret?: string;
}

export interface WebhookSettings {
  webhook: WebhookConfig | null;
  /** Every event type a filter may name. */
  event_types: string[];
}

export interface DeliveryRow {
  event_id: string;
  event: string;
  event_time: string;
  status: 'pending' | 'delivered' | 'expired' | 'disabled';
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  /** The first 1 KiB of the last attempt's response body. */
  last_response: string | null;
}

export interface ApiKeyInfo {
  api_key: string;
  created_at: string;
}

export interface BearerToken {
  token: string;
  expires_at: string;
}

// The operator's views (chains, their transactions, the audit log, verification, wallet exports): the
// services that build them own them; the console answers them as they are.
export type {
  AuditCheck,
  AuditEntry,
  ChainDivergence,
  ChainOverview,
  ChainRelayer,
  ChainTxRow,
  ChainVerifyReport,
  WalletExport,
} from '../operator-views.js';
