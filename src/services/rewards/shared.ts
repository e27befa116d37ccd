// Shared by the reward use cases and jobs: limits, errors, row locks and the per-(reward, user) ledger.
// (Their job kinds are in src/jobs/kinds.ts, their chain transaction kinds in src/chain/outcomes.ts.)
import type { Ctx } from '../context.js';
import type { Tx } from '../../store/db.js';
import { lockForShare, lockForUpdate } from '../../store/locks.js';
import { ApiError } from '../../util/errors.js';
import { unitsFromDb, unitsToDb } from '../../domain/amounts.js';
import type { Ledger } from '../../domain/rewards.js';
import type { RewardRow } from './views.js';

export const MAX_ALLOCATION_ROUNDS = 5;
export const MAX_CLAIM_ROUNDS = 5;
/** Gas the forwarded claim() may use: an ERC-20 transfer, three storage writes and an event (~70k). */
export const CLAIM_GAS = 150_000n;
/** A forwarded request that sits unmined longer than this expires and is signed again. */
export const FORWARD_TTL_S = 3600;

// ------------------------------------------------------------------------------------------ errors

export const rewardNotFound = () => ApiError.notFound('Reward');
export const userNotFound = () => ApiError.notFound('User');
export const duplicateNonce = () => ApiError.of('duplicate_nonce');
export const withdrawnError = () => ApiError.of('reward_withdrawn');

// --------------------------------------------------------------------------------------- helpers

/** The reward row, locked for the rest of `tx` (store/locks.ts). */
export async function lockReward(_ctx: Ctx, tx: Tx, uid: string, mode: 'update' | 'share', appUid?: string): Promise<RewardRow | undefined> {
  let q = tx.selectFrom('rewards').selectAll().where('uid', '=', uid);
  if (appUid !== undefined) q = q.where('app_uid', '=', appUid);
  return (mode === 'update' ? lockForUpdate(q) : lockForShare(q)).executeTakeFirst();
}

export interface LedgerRow extends Ledger {
  claimUid: string | null;
}

/** The (reward, user) ledger row, locked; created with zeros when `create` and missing. */
export async function lockLedger(_ctx: Ctx, tx: Tx, rewardUid: string, userUid: string, create: boolean): Promise<LedgerRow | null> {
  if (create) {
    await tx
      .insertInto('reward_balances')
      .values({ reward_uid: rewardUid, user_uid: userUid, allocated: '0', allocated_done: '0', claimed: '0', claim_uid: null, updated_at: Date.now() })
      .onConflict((oc) => oc.columns(['reward_uid', 'user_uid']).doNothing())
      .execute();
  }
  const r = await lockForUpdate(
    tx.selectFrom('reward_balances').selectAll().where('reward_uid', '=', rewardUid).where('user_uid', '=', userUid),
  ).executeTakeFirst();
  if (!r) return null;
  return { allocated: unitsFromDb(r.allocated), allocatedDone: unitsFromDb(r.allocated_done), claimed: unitsFromDb(r.claimed), claimUid: r.claim_uid };
}

export async function writeLedger(tx: Tx, rewardUid: string, userUid: string, l: LedgerRow): Promise<void> {
  await tx
    .updateTable('reward_balances')
    .set({
      allocated: unitsToDb(l.allocated),
      allocated_done: unitsToDb(l.allocatedDone),
      claimed: unitsToDb(l.claimed),
      claim_uid: l.claimUid,
      updated_at: Date.now(),
    })
    .where('reward_uid', '=', rewardUid)
    .where('user_uid', '=', userUid)
    .execute();
}

export const claimGroup = (rewardUid: string, userUid: string) => `${rewardUid}:${userUid}`;
