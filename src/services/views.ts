// The API objects (docs/api.md, Objects), built from rows. Key order is part of the contract.
import type { Selectable } from 'kysely';
import type { Installation } from '../config/config.js';
import type { AssetTable, CollectionTable, UserTable, WalletTable } from '../store/schema.js';
import { chainSpecOf } from '../chain/chains.js';

type UserRow = Selectable<UserTable>;
type CollectionRow = Selectable<CollectionTable>;
type AssetRow = Selectable<AssetTable>;
export type WalletRow = Pick<Selectable<WalletTable>, 'user_uid' | 'chain_id' | 'address'>;

/** Addresses leave in lower-case hex, as the hosted service answers them. */
export const lowerHex = (a: string | null): string | null => (a ? a.toLowerCase() : null);

/** `chain` and `network` are the chain's configured name exactly as given ("Amoy", never "amoy"). */
export function chainOf(installation: Installation, chainId: number) {
  const spec = chainSpecOf(installation.chains, chainId);
  return { chain: spec.name, network: spec.name, chain_id: spec.id, explorer: spec.explorer };
}

/** `wallets`: the user's wallet on each chain (rows of the user, oldest first). */
export function userView(u: UserRow, wallets: WalletRow[], installation: Installation) {
  return {
    uid: u.uid,
    created_at: u.created_at,
    email: u.email,
    user_external_id: u.user_external_id,
    wallets: wallets
      .filter((w) => w.user_uid === u.uid)
      .map((w) => {
        const n = chainOf(installation, w.chain_id);
        return { address: lowerHex(w.address), explorer_url: `${n.explorer}/address/${lowerHex(w.address)}`, network: n.network, chain_id: n.chain_id };
      }),
  };
}

export function collectionView(c: CollectionRow, installation: Installation) {
  const n = chainOf(installation, c.chain_id);
  const deployed = c.status === 'deployed';
  return {
    uid: c.uid,
    name: c.name,
    created_at: c.created_at,
    status: c.status === 'failed' ? 'deploying' : c.status,
    type: c.standard ?? 'ERC721',
    editable_assets: c.editable === 1,
    contract_address: deployed ? lowerHex(c.contract_address) : null,
    symbol: c.symbol,
    description: c.description,
    external_url: c.external_url,
    explorer_url: deployed && c.contract_address ? `${n.explorer}/address/${lowerHex(c.contract_address)}` : null,
    chain: n.chain,
    network: n.network,
    chain_id: n.chain_id,
    royalty_receiver: lowerHex(c.royalty_receiver),
    royalty_bps: c.royalty_bps === null ? null : Number(c.royalty_bps),
    soulbound: c.soulbound === 1,
    contract_uri: c.contract_uri,
  };
}

export function assetView(a: AssetRow, c: Pick<CollectionRow, 'name' | 'contract_address' | 'chain_id'>, installation: Installation) {
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
    explorer_url: minted && c.contract_address ? `${chainOf(installation, c.chain_id).explorer}/token/${lowerHex(c.contract_address)}?a=${a.token_id}` : null,
    token_uri: minted ? a.token_uri : null,
    sale_price_in_usd: a.sale_price_in_usd === null ? null : Number(a.sale_price_in_usd),
    metadata: JSON.parse(a.metadata) as Record<string, unknown>,
    // A mint that failed for good says why (an extra trailing key; the documented keys keep their order).
    ...(a.mint_status === 'failed' ? { mint_error: a.mint_error } : {}),
  };
}
