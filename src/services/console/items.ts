// The console's views of ERC-1155 items: a collection's items, one item with its newest mints and its
// holders, and what a user holds. Amounts are the API's (numbers up to 2^53 - 1, strings beyond), so
// the browser shows them exactly.
import type { Ctx } from '../context.js';
import { ApiError } from '../../util/errors.js';
import { amountFromDb, itemAmountOut } from '../../domain/items.js';
import { itemRow, listItems } from '../items/catalog.js';
import { itemMintView, itemView } from '../items/views.js';
import type { ItemDetail, ItemHolding, ItemMintRowView, ItemRowView } from './types.js';

/** The newest mints and the largest holders an item's page shows. */
const ITEM_PAGE_ROWS = 200;

export async function listCollectionItems(ctx: Ctx, appUid: string, collectionUid: string): Promise<ItemRowView[]> {
  const c = await ctx.db.selectFrom('collections').select('uid').where('uid', '=', collectionUid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!c) throw ApiError.notFound('Collection');
  return listItems(ctx, appUid, c.uid);
}

export async function itemDetail(ctx: Ctx, appUid: string, itemUid: string): Promise<ItemDetail> {
  const item = await itemRow(ctx.db, appUid, itemUid);
  const [collection, mints, holders] = await Promise.all([
    ctx.db.selectFrom('collections').select('name').where('uid', '=', item.collection_uid).executeTakeFirstOrThrow(),
    ctx.db
      .selectFrom('item_mints')
      .selectAll()
      .where('item_uid', '=', item.uid)
      .orderBy('created_at', 'desc')
      .orderBy('uid', 'desc')
      .limit(ITEM_PAGE_ROWS)
      .execute(),
    ctx.db
      .selectFrom('item_balances')
      .select(['user_uid', 'amount'])
      .where('item_uid', '=', item.uid)
      .where('amount', '!=', '0')
      .orderBy('user_uid')
      .limit(ITEM_PAGE_ROWS)
      .execute(),
  ]);
  return {
    item: itemView(item, ctx.installation),
    collection_name: collection.name,
    mints: mints.map((m) => itemMintView(m) as ItemMintRowView),
    // Decimal text in the database: compared as numbers here, largest first.
    holders: holders
      .map((h) => ({ user_uid: h.user_uid, held: amountFromDb(h.amount) }))
      .sort((a, b) => (a.held === b.held ? 0 : a.held > b.held ? -1 : 1))
      .map((h) => ({ user_uid: h.user_uid, amount: itemAmountOut(h.held) })),
  };
}

export async function userItemHoldings(ctx: Ctx, appUid: string, userUid: string): Promise<ItemHolding[]> {
  const rows = await ctx.db
    .selectFrom('item_balances')
    .innerJoin('items', 'items.uid', 'item_balances.item_uid')
    .select(['items.uid', 'items.name', 'items.collection_uid', 'items.token_id', 'item_balances.amount'])
    .where('item_balances.user_uid', '=', userUid)
    .where('items.app_uid', '=', appUid)
    .where('item_balances.amount', '!=', '0')
    .orderBy('items.collection_uid')
    .orderBy('items.token_id')
    .execute();
  return rows.map((r) => ({
    item_uid: r.uid,
    name: r.name,
    collection_uid: r.collection_uid,
    token_id: Number(r.token_id),
    amount: itemAmountOut(amountFromDb(r.amount)),
  }));
}
