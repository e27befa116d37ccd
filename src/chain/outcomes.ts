// The kinds of chain transaction, each declared once with the payload it is recorded with, and the shape
// of the handlers that apply their outcomes. `ChainSender.record` takes a payload of its kind's type; the
// handlers come to the sender as one table with a handler for every kind (`OutcomeHandlers`), so a kind
// without one is a type error where the table is built. A kind is what `chain_txs.kind` stores: never
// change one, recorded transactions carry it.
import type { Hex, TransactionReceipt } from 'viem';
import type { Selectable } from 'kysely';
import type { Tx } from '../store/db.js';
import type { ChainTxTable } from '../store/schema.js';
import type { Action } from '../domain/lifecycle.js';

/** A recorded chain transaction (`chain_txs`). */
export type ChainTxRow = Selectable<ChainTxTable>;
/**
 * A recorded transaction as the tracker follows it: its payload is read only when its outcome is applied
 * (a mint's runs to tens of KB, and the tracker reads its rows every block).
 */
export type SignedTx = Omit<ChainTxRow, 'payload'>;

export interface MintItem {
  asset_uid: string;
  token_id: number;
  to: string;
}
export interface ForwardItem {
  action: Action;
  uid: string;
  asset_uid: string;
  signer: string;
  nonce: string;
  round: number;
}
export interface AllocationItem {
  uid: string;
  to: string;
  amount: string;
  ref: Hex;
}

/** One mint of an item in a mintBatch: its uid and the collection's mint number the contract guards. */
export interface ItemMintItem {
  uid: string;
  seq: number;
}
/** A user's item transfer or burn in a relayed batch. */
export interface ItemForwardItem {
  action: Action;
  uid: string;
  signer: string;
  nonce: string;
  round: number;
}

export interface OutcomePayloads {
  /** The forwarder contract (ERC-2771), the deployer's first transaction on a chain. */
  'forwarder.deploy': Record<string, never>;
  /** A collection's contract. */
  'collection.deploy': { collection_uid: string };
  /** One mintBatch of a collection's assets; `rounds` counts each asset's attempts. */
  'asset.mint': { collection_uid: string; contract: string; items: MintItem[]; rounds: Record<string, number> };
  /** Users' signed transfers and burns relayed in one batch (its kind predates the others' naming). */
  forward: { items: ForwardItem[] };
  /** An asset's metadata edit (MetadataUpdate, and the new CID when it has one). */
  'asset.edit': { asset_uid: string };
  /** A reward's contract. */
  'reward.deploy': { reward_uid: string };
  /** One allocateBatch of a reward's allocations; `rounds` counts each allocation's attempts. */
  'reward.allocate': { reward_uid: string; contract: string; items: AllocationItem[]; rounds: Record<string, number> };
  /** A user's forwarded claim(to, ref), relayed. */
  'reward.claim': {
    claim_uid: string;
    reward_uid: string;
    user_uid: string;
    user_address: string; // lower case
    contract: string;
    forwarder: string;
    nonce: string; // the forwarder nonce of the request (decimal)
    ref: Hex;
  };
  /** The withdrawal of what a reward still holds. */
  'reward.withdraw': { reward_uid: string; contract: string };
  /** setBaseURI of a collection: its development tokens' URIs follow a new public URL. */
  'collection.base_uri': { collection_uid: string; contract: string; base_uri: string };
  /** setCollectionInfo of a collection: its royalty and contract URI as recorded (ContractURIUpdated). */
  'collection.info': { collection_uid: string; contract: string; contract_uri: string };
  /**
   * A relayer rotation's change to a contract (src/services/chain/relayer-rotation-job.ts): an operator
   * granted or revoked by the deployer, or the contract's ownership handed from the relayer that
   * deployed it to the deployer; or (`fund`) the deployer's transfer to a new relayer (`contract` and
   * `account`: the relayer).
   */
  'relayers.rotation': { rotation_id: number; action: RotationAction; contract: string; account: string };
  /** One mintBatch of an ERC-1155 collection's item mints; `rounds` counts each mint's attempts. */
  'item.mint': { collection_uid: string; contract: string; items: ItemMintItem[]; rounds: Record<string, number> };
  /** Users' signed item transfers and burns relayed in one batch. */
  'item.forward': { items: ItemForwardItem[] };
  /** An item's document on chain: setTokenCID(id, …) to `token_uri` when given, else refreshURI(id) (the URI event of an edit). */
  'item.uri': { item_uid: string; contract: string; token_id: string; token_uri?: string };
}

/** What a relayer rotation's transaction does to a contract. */
export type RotationAction = 'grant' | 'revoke' | 'handover' | 'fund';

export type OutcomeKind = keyof OutcomePayloads;

export const FORWARDER_DEPLOY_TX = 'forwarder.deploy' satisfies OutcomeKind;
export const COLLECTION_DEPLOY_TX = 'collection.deploy' satisfies OutcomeKind;
export const MINT_TX = 'asset.mint' satisfies OutcomeKind;
export const FORWARD_TX = 'forward' satisfies OutcomeKind;
export const EDIT_TX = 'asset.edit' satisfies OutcomeKind;
export const REWARD_DEPLOY_TX = 'reward.deploy' satisfies OutcomeKind;
export const ALLOCATE_TX = 'reward.allocate' satisfies OutcomeKind;
export const CLAIM_TX = 'reward.claim' satisfies OutcomeKind;
export const WITHDRAW_TX = 'reward.withdraw' satisfies OutcomeKind;
export const BASE_URI_TX = 'collection.base_uri' satisfies OutcomeKind;
export const COLLECTION_INFO_TX = 'collection.info' satisfies OutcomeKind;
export const ROTATION_TX = 'relayers.rotation' satisfies OutcomeKind;
export const ITEM_MINT_TX = 'item.mint' satisfies OutcomeKind;
export const ITEM_FORWARD_TX = 'item.forward' satisfies OutcomeKind;
export const ITEM_URI_TX = 'item.uri' satisfies OutcomeKind;

/** A mined, reverted or dropped transaction, as its handler sees it. */
export interface Outcome<K extends OutcomeKind> {
  row: SignedTx;
  payload: OutcomePayloads[K];
  ok: boolean;
  /**
   * The receipt, looked up once by the sender (also when the outcome is applied again after a restart
   * or a rewind); null when the node has none (dropped, rewound, or the node did not answer).
   */
  receipt: TransactionReceipt | null;
  reason?: string;
}

/**
 * What an outcome changes in the database. The sender runs it inside the transaction that marks the
 * outcome applied, so it runs at most once per outcome (once more after a rewind re-opens it); what it
 * returns runs after the commit (e.g. waking the jobs it queued).
 */
export type OutcomeEffect = (tx: Tx) => Promise<(() => void) | void>;

/**
 * Reads what the outcome needs from the chain (before any database transaction: no RPC while holding
 * the database), then gives the effect to apply.
 */
export type OutcomeHandler<K extends OutcomeKind> = (outcome: Outcome<K>) => Promise<OutcomeEffect>;

/** A handler for every outcome kind. */
export type OutcomeHandlers = { [K in OutcomeKind]: OutcomeHandler<K> };

/** The forwarder's deployment changes nothing beyond the transaction's own row: the chain runtime finds its code. */
export const forwarderDeployed: OutcomeHandler<'forwarder.deploy'> = async () => async () => undefined;
