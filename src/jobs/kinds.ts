// The job kinds, each declared once with the payload its jobs carry: `JobQueue.enqueue` takes a payload
// of its kind's type and a handler receives its own kind's, so a wrong payload is a type error. A kind
// is what the `jobs` table stores: never change one, queued jobs of earlier versions carry it.
import type { Action } from '../domain/lifecycle.js';

/** A job that carries nothing beyond its ref (the record it works on). */
export type NoPayload = Record<string, never>;

export interface JobPayloads {
  /** Creates a user's custodial wallet on a chain (ref: the user uid, `@<chain id>` off the home chain). */
  'wallet.create': NoPayload;
  /** Stores an accepted asset's image and metadata document before its mint (ref: the asset uid). */
  'asset.prepare': NoPayload;
  /** Publishes a stored file to an IPFS node or pinning service (ref: its CID). */
  'ipfs.publish': { target: 'kubo' | 'pinning'; name: string };
  /** Deploys a collection's contract (ref: the collection uid). */
  'collection.deploy': NoPayload;
  /** Mints an accepted asset, batched per collection (ref: the asset uid); `round` counts its attempts on chain. */
  'asset.mint': { round?: number };
  /** Relays a user's signed transfer or burn (ref: the transfer or burn uid). */
  'asset.forward': { action: Action; round?: number };
  /** Sends an asset's metadata edit on chain (ref: the asset uid; the edit itself waits on the asset row). */
  'asset.edit': NoPayload;
  /** Deploys a reward's contract (ref: the reward uid). */
  'reward.deploy': NoPayload;
  /** Writes an allocation on chain (ref: its uid); `solo` sends it alone, after a failed batch. */
  'reward.allocate': { round?: number; solo?: boolean };
  /** Executes a claim (ref: its uid). */
  'reward.claim': NoPayload;
  /** Withdraws what a reward still holds (ref: the reward uid). */
  'reward.withdraw': NoPayload;
  /** Points a deployed collection's base token URI at the installation's public URL (ref: the collection uid). */
  'collection.base_uri': { base_uri: string };
  /** Sends a collection's royalty and contract URI, as recorded, to its contract (ref: the collection uid). */
  'collection.info': NoPayload;
  /** Moves a relayer rotation of the chain on, a step at a time (ref: the rotation id). */
  'relayers.rotate': NoPayload;
  /** Mints an item mint, batched per ERC-1155 collection (ref: the mint uid); `solo` sends it alone, after a failed batch. */
  'item.mint': { round?: number; solo?: boolean };
  /** Relays a user's signed item transfer or burn (ref: the transfer or burn uid). */
  'item.forward': { action: Action; round?: number };
  /**
   * Sets an item's document on chain (ref: the item uid): its IPFS CID when it has one (setTokenCID), else
   * only the ERC-1155 URI event announcing an edit (refreshURI).
   */
  'item.uri': NoPayload;
  /** Stores an item's image and document as an asset's (IPFS for production Apps) (ref: the item uid); `edit`: after PUT /item. */
  'item.prepare': { edit?: boolean };
}

export type JobKind = keyof JobPayloads;

export const WALLET_JOB = 'wallet.create' satisfies JobKind;
export const PREPARE_JOB = 'asset.prepare' satisfies JobKind;
export const PUBLISH_JOB = 'ipfs.publish' satisfies JobKind;
export const COLLECTION_DEPLOY_JOB = 'collection.deploy' satisfies JobKind;
export const MINT_JOB = 'asset.mint' satisfies JobKind;
export const FORWARD_JOB = 'asset.forward' satisfies JobKind;
export const EDIT_JOB = 'asset.edit' satisfies JobKind;
export const REWARD_DEPLOY_JOB = 'reward.deploy' satisfies JobKind;
export const ALLOCATE_JOB = 'reward.allocate' satisfies JobKind;
export const CLAIM_JOB = 'reward.claim' satisfies JobKind;
export const WITHDRAW_JOB = 'reward.withdraw' satisfies JobKind;
export const BASE_URI_JOB = 'collection.base_uri' satisfies JobKind;
export const COLLECTION_INFO_JOB = 'collection.info' satisfies JobKind;
export const ROTATE_JOB = 'relayers.rotate' satisfies JobKind;
export const ITEM_MINT_JOB = 'item.mint' satisfies JobKind;
export const ITEM_FORWARD_JOB = 'item.forward' satisfies JobKind;
export const ITEM_URI_JOB = 'item.uri' satisfies JobKind;
export const ITEM_PREPARE_JOB = 'item.prepare' satisfies JobKind;

/**
 * Where each kind runs. Work done on a chain (deploys, mints, transfers and burns, edits, reward
 * transactions) has kinds of its own per chain (chainKind), so its own worker loops; the rest (wallets,
 * metadata) is the same on every chain. Every kind must say which (the type requires it).
 */
const RUNS_ON = {
  'wallet.create': 'every chain',
  'asset.prepare': 'every chain',
  'ipfs.publish': 'every chain',
  'collection.deploy': 'a chain',
  'asset.mint': 'a chain',
  'asset.forward': 'a chain',
  'asset.edit': 'a chain',
  'reward.deploy': 'a chain',
  'reward.allocate': 'a chain',
  'reward.claim': 'a chain',
  'reward.withdraw': 'a chain',
  'collection.base_uri': 'a chain',
  'collection.info': 'a chain',
  'relayers.rotate': 'a chain',
  'item.mint': 'a chain',
  'item.forward': 'a chain',
  'item.uri': 'a chain',
  'item.prepare': 'every chain',
} as const satisfies Record<JobKind, 'a chain' | 'every chain'>;

/** The kinds of work done on a chain, as a type: a table over them must have an entry for each. */
export type ChainJobKind = { [K in JobKind]: (typeof RUNS_ON)[K] extends 'a chain' ? K : never }[JobKind];

export function isJobKind(kind: string): kind is JobKind {
  return Object.hasOwn(RUNS_ON, kind);
}

/** The kinds of work done on a chain: each chain has its own kinds of these. */
export const CHAIN_JOB_KINDS = (Object.keys(RUNS_ON) as JobKind[]).filter((k): k is ChainJobKind => RUNS_ON[k] === 'a chain');

/**
 * Job kinds of chain work carry their chain, so each chain has its own worker loops and one chain's
 * outage or empty relayers never holds another's work back. The database's first chain (its "home",
 * the only chain before there were several) keeps the plain kind, so queued jobs of older versions
 * stay valid.
 */
export function chainKind(base: string, chainId: number, homeChainId: number): string {
  return chainId === homeChainId ? base : `${base}@${chainId}`;
}

export interface KindCtx {
  installation: { homeChainId: number };
}

/**
 * The kind of a job for a record on `chainId`, as stored and claimed. The database's home chain is the
 * one every record was on before there were several (its jobs keep their plain kinds).
 */
export function kindOn(ctx: KindCtx, base: JobKind, chainId: number): string {
  return RUNS_ON[base] === 'a chain' ? chainKind(base, chainId, ctx.installation.homeChainId) : base;
}
