// What transfer, burn and edit share: the asset's chain, the limit of attempts on chain, and the start
// of a relayed action. Preconditions are checked and claimed in ONE conditional UPDATE, so two
// concurrent requests for one asset can never both be accepted.
import type { Ctx } from '../../context.js';
import type { DbOrTx } from '../../../store/db.js';
import { queueOn } from '../../../jobs/queue.js';
import { FORWARD_JOB } from '../../../jobs/kinds.js';
import { ApiError } from '../../../util/errors.js';
import { withNewUid } from '../../uids.js';
import { nowIso } from '../../../util/time.js';
import { assetPrecondition, type Action } from '../../../domain/lifecycle.js';
import { saveAnswer, type IdempotentWrite } from '../../requests/idempotency.js';

/** Attempts on chain of a transfer, burn or edit before it is given up. */
export const MAX_ROUNDS = 3;

/** The chain of an asset: its collection's. */
export async function chainOfAsset(db: DbOrTx, assetUid: string): Promise<number> {
  const c = await db
    .selectFrom('assets')
    .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
    .select('collections.chain_id')
    .where('assets.uid', '=', assetUid)
    .executeTakeFirstOrThrow();
  return Number(c.chain_id);
}

/** Whether the asset's collection is soulbound (fixed at its creation, so no claim is needed to read it). */
async function isSoulbound(db: DbOrTx, appUid: string, assetUid: string): Promise<boolean> {
  const c = await db
    .selectFrom('assets')
    .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
    .select('collections.soulbound')
    .where('assets.uid', '=', assetUid)
    .where('assets.app_uid', '=', appUid)
    .executeTakeFirst();
  return c?.soulbound === 1;
}

/**
 * Accepts a transfer or burn: claims the asset (its flag flips only while every precondition holds),
 * records the request and queues its relay (relay.ts), all in one transaction.
 * Long: one transaction: the claim, the request and its job are written together or not at all.
 */
export async function startAction(
  ctx: Ctx,
  appUid: string,
  action: Action,
  assetUid: string,
  fromUserUid: string,
  to: string | null,
  idem: IdempotentWrite | undefined,
): Promise<{ uid: string }> {
  let chainId = 0;
  const table = action === 'transfer' ? 'transfers' : 'burns';
  const uid = await withNewUid(table, (uid) =>
    ctx.db.transaction().execute(async (tx) => {
      const user = await tx.selectFrom('users').select('uid').where('uid', '=', fromUserUid).where('app_uid', '=', appUid).executeTakeFirst();
      if (!user) throw ApiError.notFound('User');
      if (action === 'transfer' && (await isSoulbound(tx, appUid, assetUid))) throw ApiError.of('asset_soulbound');
      const flag = action === 'transfer' ? 'is_transferring' : 'is_burning';
      // The claim: only one request can flip the flag from 0 to 1 while every precondition holds.
      const claimed = await tx
        .updateTable('assets')
        .set({ [flag]: 1, updated_at: nowIso() })
        .where('uid', '=', assetUid)
        .where('app_uid', '=', appUid)
        .where('mint_status', '=', 'minted')
        .where('is_burned', '=', 0)
        .where('is_transferring', '=', 0)
        .where('is_burning', '=', 0)
        .where('owner_user_uid', '=', fromUserUid)
        .executeTakeFirst();
      if (Number(claimed.numUpdatedRows) === 0) {
        const a = await tx.selectFrom('assets').selectAll().where('uid', '=', assetUid).where('app_uid', '=', appUid).executeTakeFirst();
        if (!a) throw ApiError.notFound('Asset');
        throw ApiError.of(assetPrecondition(a, fromUserUid) ?? 'precondition_failed');
      }
      const t = nowIso();
      if (action === 'transfer') {
        await tx
          .insertInto('transfers')
          .values({
            uid,
            app_uid: appUid,
            asset_uid: assetUid,
            from_user_uid: fromUserUid,
            to_address: to!,
            status: 'pending',
            reason: null,
            attempts: 0,
            created_at: t,
            updated_at: t,
          })
          .execute();
      } else {
        await tx
          .insertInto('burns')
          .values({
            uid,
            app_uid: appUid,
            asset_uid: assetUid,
            from_user_uid: fromUserUid,
            status: 'pending',
            reason: null,
            attempts: 0,
            created_at: t,
            updated_at: t,
          })
          .execute();
      }
      chainId = await chainOfAsset(tx, assetUid);
      await queueOn(ctx, chainId).enqueue(tx, { kind: FORWARD_JOB, ref: uid, payload: { action } });
      await saveAnswer(tx, idem, { uid });
      return uid;
    }),
  );
  queueOn(ctx, chainId).notify(FORWARD_JOB);
  return { uid };
}
