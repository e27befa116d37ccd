// Burns (docs/api.md, Transfers and burns): signed by the owning user's own key as an ERC-2771 forward request and
// relayed (relay.ts).
import type { Selectable } from 'kysely';
import type { Ctx } from '../../context.js';
import type { Tx } from '../../../store/db.js';
import type { BurnTable } from '../../../store/schema.js';
import { ApiError } from '../../../util/errors.js';
import { nowIso } from '../../../util/time.js';
import { leavingFor } from '../../../domain/transitions.js';
import { keysetPage, pageOf, type PageRequest } from '../../requests/pages.js';
import { emitEvent } from '../../events.js';
import { getAsset } from '../reads.js';
import type { IdempotentWrite } from '../../requests/idempotency.js';
import { startAction } from './shared.js';

type BurnRow = Selectable<BurnTable>;

export function burnView(b: BurnRow) {
  return {
    uid: b.uid,
    asset_uid: b.asset_uid,
    from_user_uid: b.from_user_uid,
    created_at: b.created_at,
    status: b.status === 'cancelled' ? 'pending' : b.status,
  };
}

export async function createBurn(ctx: Ctx, appUid: string, p: { asset_uid: string; from_user_uid: string }, idem?: IdempotentWrite) {
  return startAction(ctx, appUid, 'burn', p.asset_uid, p.from_user_uid, null, idem);
}

export async function getBurn(ctx: Ctx, appUid: string, uid: string) {
  const b = await ctx.db.selectFrom('burns').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!b) throw ApiError.notFound('Burn');
  return burnView(b);
}

export async function listBurns(ctx: Ctx, appUid: string, userUid: string, page: PageRequest = {}) {
  const rows = await keysetPage(
    ctx.db.selectFrom('burns').selectAll().where('app_uid', '=', appUid).where('from_user_uid', '=', userUid),
    'burns',
    page,
  ).execute();
  return pageOf(rows, page, burnView);
}

/** A burn executed on chain: the asset is burned, with an `asset.burned` event. */
export async function finishBurn(ctx: Ctx, tx: Tx, uid: string): Promise<void> {
  const t = nowIso();
  const b = await tx
    .updateTable('burns')
    .set({ status: 'done', updated_at: t })
    .where('uid', '=', uid)
    .where('status', 'in', leavingFor('burn', 'done'))
    .returningAll()
    .executeTakeFirst();
  if (!b) return;
  await tx.updateTable('assets').set({ is_burning: 0, is_burned: 1, updated_at: t }).where('uid', '=', b.asset_uid).execute();
  await emitEvent(tx, b.app_uid, 'asset.burned', { asset: await getAsset(ctx, b.app_uid, b.asset_uid, tx), burn: burnView(b) });
}
