// Transfers (docs/api.md, Transfers and burns): signed by the owning user's own key as an ERC-2771 forward request and
// relayed (relay.ts); a transfer that fails on chain ends `cancelled` with a reason.
import type { Selectable } from 'kysely';
import type { Ctx } from '../../context.js';
import type { Tx } from '../../../store/db.js';
import type { TransferTable } from '../../../store/schema.js';
import { ApiError } from '../../../util/errors.js';
import { nowIso } from '../../../util/time.js';
import { leavingFor } from '../../../domain/transitions.js';
import { keysetPage, pageOf, type PageRequest } from '../../requests/pages.js';
import { parseAddressField } from '../../requests/fields.js';
import { emitEvent } from '../../events.js';
import { getAsset } from '../reads.js';
import type { IdempotentWrite } from '../../requests/idempotency.js';
import { startAction } from './shared.js';

export type TransferRow = Selectable<TransferTable>;

export function transferView(t: TransferRow) {
  const v = {
    uid: t.uid,
    asset_uid: t.asset_uid,
    from_user_uid: t.from_user_uid,
    to_address: t.to_address.toLowerCase(),
    created_at: t.created_at,
    status: t.status,
  };
  // A cancelled transfer says why (an extra trailing key; the documented keys keep their order).
  return t.status === 'cancelled' ? { ...v, reason: t.reason } : v;
}

export async function createTransfer(ctx: Ctx, appUid: string, p: { asset_uid: string; from_user_uid: string; to_address: string }, idem?: IdempotentWrite) {
  const to = parseAddressField('to_address', p.to_address);
  return startAction(ctx, appUid, 'transfer', p.asset_uid, p.from_user_uid, to, idem);
}

export async function getTransfer(ctx: Ctx, appUid: string, uid: string) {
  const t = await ctx.db.selectFrom('transfers').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!t) throw ApiError.notFound('Transfer');
  return transferView(t);
}

export async function listTransfers(ctx: Ctx, appUid: string, userUid: string, page: PageRequest = {}) {
  const rows = await keysetPage(
    ctx.db.selectFrom('transfers').selectAll().where('app_uid', '=', appUid).where('from_user_uid', '=', userUid),
    'transfers',
    page,
  ).execute();
  return pageOf(rows, page, transferView);
}

/** A transfer executed on chain: the asset has its new owner, with an `asset.transferred` event. */
export async function finishTransfer(ctx: Ctx, tx: Tx, uid: string): Promise<void> {
  const t = nowIso();
  const tr = await tx
    .updateTable('transfers')
    .set({ status: 'done', updated_at: t })
    .where('uid', '=', uid)
    .where('status', 'in', leavingFor('transfer', 'done'))
    .returningAll()
    .executeTakeFirst();
  if (!tr) return;
  // A wallet of another user of the same App makes that user the owner (still transferable).
  const toUser = await tx.selectFrom('users').select('uid').where('app_uid', '=', tr.app_uid).where('wallet_address', '=', tr.to_address).executeTakeFirst();
  await tx
    .updateTable('assets')
    .set({ is_transferring: 0, owner_address: tr.to_address, owner_user_uid: toUser?.uid ?? null, updated_at: t })
    .where('uid', '=', tr.asset_uid)
    .execute();
  await emitEvent(tx, tr.app_uid, 'asset.transferred', { asset: await getAsset(ctx, tr.app_uid, tr.asset_uid, tx), transfer: transferView(tr) });
}
