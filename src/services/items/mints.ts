// Item mints (docs/api.md, Items): POST /item/mint accepts a mint of an amount to a user, once per
// (item, nonce); the mint job (mint-job.ts) puts it on chain in a batch with others of the collection.
import type { Ctx } from '../context.js';
import { isUniqueViolation } from '../../store/db.js';
import { lockForUpdate } from '../../store/locks.js';
import { ApiError } from '../../util/errors.js';
import { isUid } from '../../util/ids.js';
import { nowIso } from '../../util/time.js';
import { amountFromDb, itemAmountOut, withinMaxSupply } from '../../domain/items.js';
import { queueOn } from '../../jobs/queue.js';
import { ITEM_MINT_JOB } from '../../jobs/kinds.js';
import { keysetPage, pageOf, type PageRequest } from '../requests/pages.js';
import { saveAnswer, type IdempotentWrite } from '../requests/idempotency.js';
import { withNewUid } from '../uids.js';
import { createWalletNow, hasWallet } from '../users/wallets.js';
import { itemNotFound } from './catalog.js';
import { itemMintView } from './views.js';

export interface ItemMintRequest {
  item_uid: string;
  to_user_uid: string;
  amount: bigint;
  nonce: string | number;
}

const duplicateNonce = () => ApiError.of('duplicate_nonce', 'A mint with this nonce already exists for this item.', 'nonce');
export const userNotFound = () => ApiError.notFound('User');

/**
 * POST /item/mint. In one transaction, under the item row's lock: the nonce is checked (and guarded by
 * a unique index), the max supply is checked against every mint accepted so far, the user's wallet on
 * the collection's chain is created if needed, the mint gets the collection's next mint number and its
 * job. A refused request changes nothing.
 * Long: one transaction under the item's lock: its checks and writes are not to be split.
 */
export async function mintItem(ctx: Ctx, appUid: string, req: ItemMintRequest, idem?: IdempotentWrite): Promise<{ uid: string }> {
  if (!isUid(req.item_uid)) throw itemNotFound();
  const nonce = String(req.nonce);
  let chainId = 0;
  try {
    const uid = await withNewUid('item_mints', (uid) =>
      ctx.db.transaction().execute(async (tx) => {
        const item = await lockForUpdate(
          tx
            .selectFrom('items')
            .innerJoin('collections', 'collections.uid', 'items.collection_uid')
            .select(['items.uid', 'items.collection_uid', 'items.max_supply', 'items.accepted_supply', 'collections.chain_id'])
            .where('items.uid', '=', req.item_uid)
            .where('items.app_uid', '=', appUid),
        ).executeTakeFirst();
        if (!item) throw itemNotFound();
        chainId = Number(item.chain_id);
        const user = await tx.selectFrom('users').select('uid').where('uid', '=', req.to_user_uid).where('app_uid', '=', appUid).executeTakeFirst();
        if (!user) throw userNotFound();
        const dup = await tx.selectFrom('item_mints').select('uid').where('item_uid', '=', item.uid).where('nonce', '=', nonce).executeTakeFirst();
        if (dup) throw duplicateNonce();
        const max = item.max_supply === null ? null : amountFromDb(item.max_supply);
        const accepted = amountFromDb(item.accepted_supply);
        if (!withinMaxSupply(max, accepted, req.amount))
          throw ApiError.of(
            'max_supply_exceeded',
            `Amount exceeds what the item's max supply leaves: ${itemAmountOut(max! - accepted)} left to mint.`,
            'amount',
          );
        await tx
          .updateTable('items')
          .set({ accepted_supply: (accepted + req.amount).toString(), updated_at: nowIso() })
          .where('uid', '=', item.uid)
          .execute();
        const address = (await hasWallet(tx, user.uid, chainId)) ? ctx.keys.userAddress(user.uid) : await createWalletNow(ctx, tx, user.uid, chainId);
        const seq = await tx
          .updateTable('collections')
          .set((eb) => ({ next_item_mint: eb('next_item_mint', '+', 1) }))
          .where('uid', '=', item.collection_uid)
          .returning('next_item_mint')
          .executeTakeFirstOrThrow();
        const t = nowIso();
        await tx
          .insertInto('item_mints')
          .values({
            uid,
            app_uid: appUid,
            item_uid: item.uid,
            to_user_uid: user.uid,
            to_address: address,
            amount: req.amount.toString(),
            nonce,
            nonce_is_number: typeof req.nonce === 'number' ? 1 : 0,
            seq: Number(seq.next_item_mint) - 1,
            status: 'pending',
            error: null,
            tx_id: null,
            created_at: t,
            updated_at: t,
          })
          .execute();
        await queueOn(ctx, chainId).enqueue(tx, { kind: ITEM_MINT_JOB, ref: uid, groupKey: item.collection_uid, payload: { round: 1 } });
        await saveAnswer(tx, idem, { uid });
        return uid;
      }),
    );
    queueOn(ctx, chainId).notify(ITEM_MINT_JOB);
    return { uid };
  } catch (err) {
    if (isUniqueViolation(err, 'nonce')) throw duplicateNonce();
    throw err;
  }
}

export async function getItemMint(ctx: Ctx, appUid: string, uid: string) {
  const m = isUid(uid) ? await ctx.db.selectFrom('item_mints').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst() : undefined;
  if (!m) throw ApiError.notFound('Item mint');
  return itemMintView(m);
}

/** Mints to a user, a page at a time (newest first); none for an unknown user. */
export async function listItemMintsOfUser(ctx: Ctx, appUid: string, userUid: string, page: PageRequest = {}) {
  const rows = await keysetPage(
    ctx.db.selectFrom('item_mints').selectAll().where('app_uid', '=', appUid).where('to_user_uid', '=', userUid),
    'item_mints',
    page,
  ).execute();
  return pageOf(rows, page, itemMintView);
}
