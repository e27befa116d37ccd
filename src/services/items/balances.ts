// Item balances as the chain holds them. Each (item, user) row keeps the amount last read from the
// chain (`balanceOfBatch`) with the block it was read at; a read never overwrites a newer one, so
// outcomes and the indexer may apply theirs in any order. `reserved` is what transfers and burns in
// flight have taken off what the user may still spend.
import type { Address, PublicClient } from 'viem';
import type { Ctx } from '../context.js';
import type { Tx } from '../../store/db.js';
import { lockForUpdate } from '../../store/locks.js';
import { artifact } from '../../chain/artifacts.js';
import { amountFromDb } from '../../domain/items.js';
import { nowIso } from '../../util/time.js';
import { isUid } from '../../util/ids.js';
import { itemBalanceView } from './views.js';
import { itemRow } from './catalog.js';

/** A holder of an item whose balance is to be read: the user, their wallet, the item's token. */
export interface Holding {
  item_uid: string;
  user_uid: string;
  address: string;
  token_id: number;
}

/** What the chain holds of each holding at `blockNumber` (one balanceOfBatch call). */
export async function readHeld(client: PublicClient, contract: string, holdings: Holding[], blockNumber: bigint): Promise<bigint[]> {
  if (holdings.length === 0) return [];
  const { abi } = artifact('MintworksItems');
  return (await client.readContract({
    address: contract as Address,
    abi,
    functionName: 'balanceOfBatch',
    args: [holdings.map((h) => h.address as Address), holdings.map((h) => BigInt(h.token_id))],
    blockNumber,
  })) as bigint[];
}

/** The (item, user) balance row, locked; created empty when missing. */
export async function lockBalance(tx: Tx, itemUid: string, userUid: string) {
  await tx
    .insertInto('item_balances')
    .values({ item_uid: itemUid, user_uid: userUid, amount: '0', reserved: '0', block_number: 0, updated_at: nowIso() })
    .onConflict((oc) => oc.columns(['item_uid', 'user_uid']).doNothing())
    .execute();
  const r = await lockForUpdate(
    tx.selectFrom('item_balances').selectAll().where('item_uid', '=', itemUid).where('user_uid', '=', userUid),
  ).executeTakeFirstOrThrow();
  return { amount: amountFromDb(r.amount), reserved: amountFromDb(r.reserved), block: Number(r.block_number) };
}

/**
 * Writes what the chain held at `block`, unless a newer reading is stored. Returns the amount stored
 * before and whether this reading was written.
 */
export async function writeHeld(tx: Tx, h: Pick<Holding, 'item_uid' | 'user_uid'>, held: bigint, block: bigint): Promise<{ before: bigint; written: boolean }> {
  const row = await lockBalance(tx, h.item_uid, h.user_uid);
  if (BigInt(row.block) > block) return { before: row.amount, written: false };
  await tx
    .updateTable('item_balances')
    .set({ amount: held.toString(), block_number: Number(block), updated_at: nowIso() })
    .where('item_uid', '=', h.item_uid)
    .where('user_uid', '=', h.user_uid)
    .execute();
  return { before: row.amount, written: true };
}

/** Adds `delta` (negative: gives back) to what requests in flight reserved of a balance. */
export async function reserve(tx: Tx, itemUid: string, userUid: string, delta: bigint): Promise<void> {
  const row = await lockBalance(tx, itemUid, userUid);
  const reserved = row.reserved + delta;
  await tx
    .updateTable('item_balances')
    .set({ reserved: (reserved > 0n ? reserved : 0n).toString(), updated_at: nowIso() })
    .where('item_uid', '=', itemUid)
    .where('user_uid', '=', userUid)
    .execute();
}

/** GET /item/balance?item_uid=&user_uid=: 404 for an unknown item; an unknown user holds 0. */
export async function getItemBalance(ctx: Ctx, appUid: string, itemUid: string, userUid: string) {
  const item = await itemRow(ctx.db, appUid, itemUid);
  const b = await ctx.db.selectFrom('item_balances').select('amount').where('item_uid', '=', item.uid).where('user_uid', '=', userUid).executeTakeFirst();
  return itemBalanceView(item.uid, userUid, amountFromDb(b?.amount));
}

/** GET /item/balance?user_uid=: every item the user holds (amount > 0), by item. */
export async function listItemBalances(ctx: Ctx, appUid: string, userUid: string) {
  if (!isUid(userUid)) return [];
  const rows = await ctx.db
    .selectFrom('item_balances')
    .innerJoin('items', 'items.uid', 'item_balances.item_uid')
    .select(['item_balances.item_uid', 'item_balances.amount'])
    .where('item_balances.user_uid', '=', userUid)
    .where('items.app_uid', '=', appUid)
    .where('item_balances.amount', '!=', '0')
    .orderBy('item_balances.item_uid')
    .execute();
  return rows.map((r) => itemBalanceView(r.item_uid, userUid, amountFromDb(r.amount)));
}
