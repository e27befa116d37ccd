// Pure preconditions of transfer and burn (docs/api.md, Transfers and burns): the asset is minted, not already
// transferring or being burned, not burned, and owned by the requesting user.

import type { ErrorCodeWithMessage } from './error-codes.js';

export type Action = 'transfer' | 'burn';

export interface AssetState {
  mint_status: string;
  is_burned: number;
  is_burning: number;
  is_transferring: number;
  owner_user_uid: string | null;
}

/** The code of the first failed precondition (its message is the catalogue's), in the order a developer
 * would fix them, or null when all hold. */
export function assetPrecondition(a: AssetState, fromUserUid: string): ErrorCodeWithMessage | null {
  if (a.mint_status !== 'minted') return 'asset_not_minted';
  if (a.is_burned) return 'asset_burned';
  if (a.is_burning) return 'asset_burning';
  if (a.is_transferring) return 'asset_transferring';
  if (a.owner_user_uid !== fromUserUid) return 'not_owner';
  return null;
}
