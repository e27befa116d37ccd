// Pure preconditions of transfer and burn (docs/api.md, Transfers and burns): the asset is minted, not already
// transferring or being burned, not burned, and owned by the requesting user.

export type Action = 'transfer' | 'burn';

export interface AssetState {
  mint_status: string;
  is_burned: number;
  is_burning: number;
  is_transferring: number;
  owner_user_uid: string | null;
}

export interface Failed {
  code: string;
  message: string;
}

/** The first failed precondition, in the order a developer would fix them, or null when all hold. */
export function assetPrecondition(a: AssetState, fromUserUid: string): Failed | null {
  if (a.mint_status !== 'minted') return { code: 'asset_not_minted', message: 'Asset is not minted yet.' };
  if (a.is_burned) return { code: 'asset_burned', message: 'Asset is burned.' };
  if (a.is_burning) return { code: 'asset_burning', message: 'Asset is being burned.' };
  if (a.is_transferring) return { code: 'asset_transferring', message: 'Asset is already being transferred.' };
  if (a.owner_user_uid !== fromUserUid) return { code: 'not_owner', message: 'Asset is not owned by from_user_uid.' };
  return null;
}
