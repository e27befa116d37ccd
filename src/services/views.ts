// The API objects (docs/api.md, Objects), built from rows. Key order is part of the contract. The asset's
// is in ./asset-view.ts.
import type { Selectable } from 'kysely';
import type { Installation } from '../config/config.js';
import type { CollectionTable, UserTable, WalletTable } from '../store/schema.js';
import { chainSpecOf } from '../chain/chains.js';

type UserRow = Selectable<UserTable>;
type CollectionRow = Selectable<CollectionTable>;
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
