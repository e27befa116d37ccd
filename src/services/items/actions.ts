// Item transfers and burns (docs/api.md, Items): accepted when what the user holds on chain, less what
// their transfers and burns in flight reserved, covers the amount; relayed gasless through the
// forwarder, signed with the user's own key (relay.ts).
import type { Ctx } from '../context.js';
import type { Tx } from '../../store/db.js';
import { ApiError } from '../../util/errors.js';
import { isUid } from '../../util/ids.js';
import { nowIso } from '../../util/time.js';
import { itemAmountOut, spendable } from '../../domain/items.js';
import type { Action } from '../../domain/lifecycle.js';
import { queueOn } from '../../jobs/queue.js';
import { ITEM_FORWARD_JOB } from '../../jobs/kinds.js';
import { keysetPage, pageOf, type PageRequest } from '../requests/pages.js';
import { parseAddressField } from '../requests/fields.js';
import { saveAnswer, type IdempotentWrite } from '../requests/idempotency.js';
import { withNewUid } from '../uids.js';
import { itemNotFound } from './catalog.js';
import { lockBalance, reserve } from './balances.js';
import { userNotFound } from './mints.js';
import { itemBurnView, itemTransferView } from './views.js';

export interface ItemActionRequest {
  item_uid: string;
  from_user_uid: string;
  amount: bigint;
  /** Transfers only. */
  to_address?: string;
}

const TABLES = { transfer: 'item_transfers', burn: 'item_burns' } as const;

/**
 * POST /item/transfer and /item/burn. In one transaction, under the balance row's lock: the amount is
 * checked against what the user may spend and reserved, the request and its relay job written.
 */
export async function startItemAction(ctx: Ctx, appUid: string, action: Action, req: ItemActionRequest, idem?: IdempotentWrite): Promise<{ uid: string }> {
  const to = action === 'transfer' ? parseAddressField('to_address', req.to_address ?? '') : null;
  if (!isUid(req.item_uid)) throw itemNotFound();
  let chainId = 0;
  const uid = await withNewUid(TABLES[action], (uid) =>
    ctx.db.transaction().execute(async (tx) => {
      const item = await tx
        .selectFrom('items')
        .innerJoin('collections', 'collections.uid', 'items.collection_uid')
        .select(['items.uid', 'collections.chain_id'])
        .where('items.uid', '=', req.item_uid)
        .where('items.app_uid', '=', appUid)
        .executeTakeFirst();
      if (!item) throw itemNotFound();
      const user = await tx.selectFrom('users').select('uid').where('uid', '=', req.from_user_uid).where('app_uid', '=', appUid).executeTakeFirst();
      if (!user) throw userNotFound();
      const balance = await lockBalance(tx, item.uid, user.uid);
      const free = spendable(balance.amount, balance.reserved);
      if (req.amount > free)
        throw ApiError.of(
          'insufficient_balance',
          `The user holds ${itemAmountOut(free)} of this item that is not already being transferred or burned.`,
          'amount',
        );
      await reserve(tx, item.uid, user.uid, req.amount);
      const t = nowIso();
      const row = {
        uid,
        app_uid: appUid,
        item_uid: item.uid,
        from_user_uid: user.uid,
        amount: req.amount.toString(),
        status: 'pending' as const,
        reason: null,
        created_at: t,
        updated_at: t,
      };
      if (to !== null)
        await tx
          .insertInto('item_transfers')
          .values({ ...row, to_address: to })
          .execute();
      else await tx.insertInto('item_burns').values(row).execute();
      chainId = Number(item.chain_id);
      await queueOn(ctx, chainId).enqueue(tx, { kind: ITEM_FORWARD_JOB, ref: uid, payload: { action } });
      await saveAnswer(tx, idem, { uid });
      return uid;
    }),
  );
  queueOn(ctx, chainId).notify(ITEM_FORWARD_JOB);
  return { uid };
}

export async function getItemAction(ctx: Ctx, appUid: string, action: Action, uid: string) {
  if (action === 'transfer') {
    const t = isUid(uid)
      ? await ctx.db.selectFrom('item_transfers').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst()
      : undefined;
    if (!t) throw ApiError.notFound('Item transfer');
    return itemTransferView(t);
  }
  const b = isUid(uid) ? await ctx.db.selectFrom('item_burns').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst() : undefined;
  if (!b) throw ApiError.notFound('Item burn');
  return itemBurnView(b);
}

/** A user's item transfers or burns, a page at a time (newest first). */
export async function listItemActions(ctx: Ctx, appUid: string, action: Action, userUid: string, page: PageRequest = {}) {
  if (action === 'transfer') {
    const rows = await keysetPage(
      ctx.db.selectFrom('item_transfers').selectAll().where('app_uid', '=', appUid).where('from_user_uid', '=', userUid),
      'item_transfers',
      page,
    ).execute();
    return pageOf(rows, page, itemTransferView);
  }
  const rows = await keysetPage(
    ctx.db.selectFrom('item_burns').selectAll().where('app_uid', '=', appUid).where('from_user_uid', '=', userUid),
    'item_burns',
    page,
  ).execute();
  return pageOf(rows, page, itemBurnView);
}

/**
 * Ends a pending transfer or burn (done or cancelled) and gives back its reservation. Returns the row
 * as ended, or null when it had ended already (outcomes are re-applied after a rewind).
 */
export async function endItemAction(tx: Tx, action: Action, uid: string, status: 'done' | 'cancelled', reason: string | null) {
  const table = TABLES[action];
  const row = await tx
    .updateTable(table)
    .set({ status, reason, updated_at: nowIso() })
    .where('uid', '=', uid)
    .where('status', '=', 'pending')
    .returningAll()
    .executeTakeFirst();
  if (!row) return null;
  await reserve(tx, row.item_uid, row.from_user_uid, -BigInt(row.amount));
  return row as typeof row & { to_address?: string };
}
