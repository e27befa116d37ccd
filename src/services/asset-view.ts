// The asset object (docs/api.md, Objects), built from a row. Key order is part of the contract. Reads
// for it select only the columns it prints (a page holds up to 1,000 assets).
import type { Selectable } from 'kysely';
import type { Installation } from '../config/config.js';
import type { AssetTable, CollectionTable } from '../store/schema.js';
import { chainSpecOf } from '../chain/chains.js';
import { lowerHex } from './views.js';

/** The asset columns the object is made of: what a read of assets for their view selects. */
export const assetViewColumns = [
  'uid',
  'name',
  'asset_external_id',
  'collection_uid',
  'created_at',
  'token_id',
  'mint_status',
  'mint_error',
  'is_burned',
  'is_transferring',
  'is_editing',
  'mint_for_user_uid',
  'mint_for_address',
  'owner_user_uid',
  'owner_address',
  'token_uri',
  'sale_price_in_usd',
  'metadata',
] as const;

export type AssetViewRow = Pick<Selectable<AssetTable>, (typeof assetViewColumns)[number]>;
export type AssetCollection = Pick<Selectable<CollectionTable>, 'name' | 'contract_address' | 'chain_id'>;

export function assetView(a: AssetViewRow, c: AssetCollection, installation: Installation) {
  const minted = a.mint_status === 'minted';
  const burned = a.is_burned === 1;
  const transferring = a.is_transferring === 1;
  return {
    uid: a.uid,
    name: a.name,
    asset_external_id: a.asset_external_id,
    collection_uid: a.collection_uid,
    collection_name: c.name,
    created_at: a.created_at,
    token_id: minted ? a.token_id : null,
    is_minted: minted,
    is_burned: burned,
    is_transferring: transferring,
    is_transferable: minted && !burned && !transferring && a.owner_user_uid !== null,
    is_editing: a.is_editing === 1,
    mint_for_user_uid: a.mint_for_user_uid,
    mint_for_address: lowerHex(a.mint_for_address),
    owner_user_uid: minted ? a.owner_user_uid : null,
    owner_address: minted ? lowerHex(a.owner_address) : null,
    explorer_url:
      minted && c.contract_address ? `${chainSpecOf(installation.chains, c.chain_id).explorer}/token/${lowerHex(c.contract_address)}?a=${a.token_id}` : null,
    token_uri: minted ? a.token_uri : null,
    sale_price_in_usd: a.sale_price_in_usd === null ? null : Number(a.sale_price_in_usd),
    metadata: JSON.parse(a.metadata) as Record<string, unknown>,
    // A mint that failed for good says why (an extra trailing key; the documented keys keep their order).
    ...(a.mint_status === 'failed' ? { mint_error: a.mint_error } : {}),
  };
}

/** The object as JSON text: it holds no exact decimals (domain/exact-json.ts), so JSON.stringify writes it. */
export function assetJson(a: AssetViewRow, c: AssetCollection, installation: Installation): string {
  return JSON.stringify(assetView(a, c, installation));
}
