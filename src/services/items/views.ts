// The Item, ItemMint, ItemTransfer, ItemBurn and Balance objects of the API (docs/api.md, Items), built
// from rows. Key order is part of the contract; amounts are written as numbers up to 2^53 - 1, else as
// strings (src/domain/items.ts).
import type { Selectable } from 'kysely';
import type { Installation } from '../../config/config.js';
import type { ItemBurnTable, ItemMintTable, ItemTable, ItemTransferTable } from '../../store/schema.js';
import { amountFromDb, itemAmountOut } from '../../domain/items.js';
import { lowerHex } from '../views.js';

export type ItemRow = Selectable<ItemTable>;
export type ItemMintRow = Selectable<ItemMintTable>;
export type ItemTransferRow = Selectable<ItemTransferTable>;
export type ItemBurnRow = Selectable<ItemBurnTable>;

/** The token URI of an item: the collection's metadata route + its token id (the contract's `uri(id)`). */
export function itemTokenUri(installation: Installation, i: Pick<ItemRow, 'collection_uid' | 'token_id'>): string {
  return `${installation.publicUrl}/metadata/${i.collection_uid}/${i.token_id}`;
}

export function itemView(i: ItemRow, installation: Installation) {
  return {
    uid: i.uid,
    collection_uid: i.collection_uid,
    item_external_id: i.item_external_id,
    token_id: Number(i.token_id),
    name: i.name,
    // A production App's IPFS document once prepared (as an asset's), else the metadata route.
    token_uri: i.token_uri ?? itemTokenUri(installation, i),
    max_supply: i.max_supply === null ? null : itemAmountOut(amountFromDb(i.max_supply)),
    minted_supply: itemAmountOut(amountFromDb(i.minted_supply)),
    created_at: i.created_at,
    metadata: JSON.parse(i.metadata) as Record<string, unknown>,
  };
}

export function itemMintView(m: ItemMintRow) {
  const v = {
    uid: m.uid,
    item_uid: m.item_uid,
    to_user_uid: m.to_user_uid,
    amount: itemAmountOut(amountFromDb(m.amount)),
    // Echoed as the client sent it: a JSON number stays a number.
    nonce: m.nonce_is_number === 1 ? Number(m.nonce) : m.nonce,
    created_at: m.created_at,
    status: m.status,
  };
  // A failed mint says why (an extra trailing key, as failed allocations do).
  return m.status === 'failed' ? { ...v, reason: m.error ?? 'failed' } : v;
}

export function itemTransferView(t: ItemTransferRow) {
  const v = {
    uid: t.uid,
    item_uid: t.item_uid,
    from_user_uid: t.from_user_uid,
    to_address: lowerHex(t.to_address),
    amount: itemAmountOut(amountFromDb(t.amount)),
    created_at: t.created_at,
    status: t.status,
  };
  return t.status === 'cancelled' ? { ...v, reason: t.reason } : v;
}

export function itemBurnView(b: ItemBurnRow) {
  const v = {
    uid: b.uid,
    item_uid: b.item_uid,
    from_user_uid: b.from_user_uid,
    amount: itemAmountOut(amountFromDb(b.amount)),
    created_at: b.created_at,
    status: b.status,
  };
  return b.status === 'cancelled' ? { ...v, reason: b.reason } : v;
}

export function itemBalanceView(itemUid: string, userUid: string, amount: bigint) {
  return { item_uid: itemUid, user_uid: userUid, amount: itemAmountOut(amount) };
}
