// The reward use cases behind the API and the CLI: create, read, allocate, claim, withdraw.
import type { Ctx } from '../context.js';
import { keysetPage, pageOf, type PageRequest } from '../requests/pages.js';
import { isUniqueViolation } from '../../store/db.js';
import { ApiError, type FieldError } from '../../util/errors.js';
import { isUid, newUid } from '../../util/ids.js';
import { nowIso } from '../../util/time.js';
import { AmountError, parseAmount, unitsFromDb, unitsToDb } from '../../domain/amounts.js';
import { balanceOf, checkBudget, type Ledger } from '../../domain/rewards.js';
import { createWalletNow, hasWallet } from '../users/wallets.js';
import { chainForNew } from '../requests/chain-choice.js';
import { queueOn } from '../../jobs/queue.js';
import { ALLOCATE_JOB, CLAIM_JOB, REWARD_DEPLOY_JOB, WITHDRAW_JOB } from '../../jobs/kinds.js';
import { parseAddressField } from '../requests/fields.js';
import { saveAnswer, type IdempotentWrite } from '../requests/idempotency.js';
import { withNewUid } from '../uids.js';
import { allocationView, balanceView, claimView, rewardAdminView, rewardView, type RewardRow } from './views.js';
import { rewardNotFound, userNotFound, duplicateNonce, withdrawnError, lockReward, lockLedger, writeLedger, claimGroup } from './shared.js';

// ------------------------------------------------------------------------------------------ create

export interface NewReward {
  name: string;
  token_name: string;
  token_symbol: string;
  supply: unknown; // a JSON number or numeric string, as for allocations
  withdraw_receiver?: string | null;
  description?: string | null;
  /** The chain to deploy on; default: the default chain. */
  chain_id?: number | null;
}

/**
 * Creates a reward and queues its contract deployment (status deploying -> deployed). Without a
 * withdraw_receiver the remainder goes to the service's deployer account, whose key derives from the
 * installation's seed (so the operator can always move it on).
 */
export async function createReward(ctx: Ctx, appUid: string, input: NewReward): Promise<{ uid: string }> {
  const problems: FieldError[] = [];
  if (!input.name?.trim()) problems.push({ field: 'name', code: 'required', message: 'Name must not be empty.' });
  if (!input.token_name?.trim() || input.token_name.length > 100)
    problems.push({ field: 'token_name', code: 'invalid', message: 'Token name must be 1-100 characters.' });
  if (!/^[A-Za-z0-9]{1,16}$/.test(input.token_symbol ?? ''))
    problems.push({ field: 'token_symbol', code: 'invalid', message: 'Token symbol must be 1-16 letters or digits.' });
  let supply = 0n;
  try {
    supply = parseAmount(input.supply);
  } catch (err) {
    if (!(err instanceof AmountError)) throw err;
    problems.push({ field: 'supply', code: 'invalid', message: err.message });
  }
  if (problems.length) throw ApiError.validation(problems);
  const chainId = chainForNew(ctx, input.chain_id);
  const receiver = input.withdraw_receiver ? parseAddressField('withdraw_receiver', input.withdraw_receiver) : ctx.keys.deployer().address.toLowerCase();
  const app = await ctx.db.selectFrom('apps').select('uid').where('uid', '=', appUid).executeTakeFirst();
  if (!app) throw ApiError.notFound('App');
  const uid = newUid();
  await ctx.db.transaction().execute(async (tx) => {
    await tx
      .insertInto('rewards')
      .values({
        uid,
        app_uid: appUid,
        name: input.name.trim(),
        description: input.description ?? null,
        token_name: input.token_name,
        token_symbol: input.token_symbol,
        supply: unitsToDb(supply),
        unallocated: unitsToDb(supply),
        withdraw_receiver: receiver,
        status: 'deploying',
        contract_address: null,
        withdraw_status: null,
        withdraw_tx_id: null,
        withdrawn_amount: null,
        withdrawn_at: null,
        created_at: nowIso(),
        chain_id: chainId,
      })
      .execute();
    await queueOn(ctx, chainId).enqueue(tx, { kind: REWARD_DEPLOY_JOB, ref: uid });
  });
  queueOn(ctx, chainId).notify(REWARD_DEPLOY_JOB);
  return { uid };
}

async function rewardRow(ctx: Ctx, appUid: string, uid: string): Promise<RewardRow> {
  if (!isUid(uid)) throw rewardNotFound();
  const r = await ctx.db.selectFrom('rewards').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!r) throw rewardNotFound();
  return r;
}

export async function getReward(ctx: Ctx, appUid: string, uid: string) {
  return rewardView(await rewardRow(ctx, appUid, uid), ctx.installation);
}

export async function getRewardAdmin(ctx: Ctx, appUid: string, uid: string) {
  return rewardAdminView(await rewardRow(ctx, appUid, uid), ctx.installation);
}

export async function listRewards(ctx: Ctx, appUid: string) {
  const rows = await ctx.db.selectFrom('rewards').selectAll().where('app_uid', '=', appUid).orderBy('created_at', 'desc').limit(1000).execute();
  return rows.map((r) => rewardAdminView(r, ctx.installation));
}

// ----------------------------------------------------------------------------------------- balance

/** GET /reward/balance. An unknown user has nothing: amount 0 (lists answer [] likewise). */
export async function getBalance(ctx: Ctx, appUid: string, rewardUid: string, userUid: string) {
  const r = await rewardRow(ctx, appUid, rewardUid);
  const l = await ctx.db.selectFrom('reward_balances').selectAll().where('reward_uid', '=', r.uid).where('user_uid', '=', userUid).executeTakeFirst();
  const ledger: Ledger = { allocated: unitsFromDb(l?.allocated), allocatedDone: unitsFromDb(l?.allocated_done), claimed: unitsFromDb(l?.claimed) };
  return balanceView(r.uid, userUid, balanceOf(ledger, r.withdraw_status === 'done'));
}

// ------------------------------------------------------------------------------------- allocations

export interface AllocationRequest {
  reward_uid: string;
  to_user_uid: string;
  amount: bigint; // base units, > 0 (parsed by the route)
  nonce: string | number;
}

/**
 * POST /reward/allocate. In one transaction, under the reward row's lock: the nonce is checked
 * (and guarded by a unique index), the budget is reduced, the user's wallet is created if needed, the
 * allocation, its ledger entry and its job are written. A refused request changes nothing.
 * Long: one transaction under the reward's lock: its checks and writes are not to be split.
 */
export async function allocate(ctx: Ctx, appUid: string, req: AllocationRequest, idem?: IdempotentWrite): Promise<{ uid: string }> {
  if (req.amount <= 0n) throw new Error('allocate: amount must be positive');
  if (!isUid(req.reward_uid)) throw rewardNotFound();
  const nonce = String(req.nonce);
  let uid = '';
  let chainId = 0;
  try {
    uid = await withNewUid('allocations', (uid) =>
      ctx.db.transaction().execute(async (tx) => {
        const reward = await lockReward(ctx, tx, req.reward_uid, 'update', appUid);
        if (!reward) throw rewardNotFound();
        if (reward.withdraw_status !== null) throw withdrawnError();
        chainId = Number(reward.chain_id);
        const user = await tx.selectFrom('users').select(['uid']).where('uid', '=', req.to_user_uid).where('app_uid', '=', appUid).executeTakeFirst();
        if (!user) throw userNotFound();
        const dup = await tx.selectFrom('allocations').select('uid').where('reward_uid', '=', reward.uid).where('nonce', '=', nonce).executeTakeFirst();
        if (dup) throw duplicateNonce();
        const budget = checkBudget(unitsFromDb(reward.unallocated), req.amount);
        if (!budget.ok) throw ApiError.of('insufficient_supply', budget.message, 'amount');
        await tx
          .updateTable('rewards')
          .set({ unallocated: unitsToDb(budget.left) })
          .where('uid', '=', reward.uid)
          .execute();
        // The user's wallet on the reward's chain (an allocation is the user's first action there, perhaps).
        const address = (await hasWallet(tx, user.uid, chainId)) ? ctx.keys.userAddress(user.uid) : await createWalletNow(ctx, tx, user.uid, chainId);
        const t = nowIso();
        await tx
          .insertInto('allocations')
          .values({
            uid,
            app_uid: appUid,
            reward_uid: reward.uid,
            to_user_uid: user.uid,
            to_address: address,
            amount: unitsToDb(req.amount),
            nonce,
            nonce_is_number: typeof req.nonce === 'number' ? 1 : 0,
            status: 'pending',
            error: null,
            tx_id: null,
            created_at: t,
            updated_at: t,
          })
          .execute();
        const ledger = (await lockLedger(ctx, tx, reward.uid, user.uid, true))!;
        ledger.allocated += req.amount;
        await writeLedger(tx, reward.uid, user.uid, ledger);
        await queueOn(ctx, chainId).enqueue(tx, { kind: ALLOCATE_JOB, ref: uid, groupKey: reward.uid, payload: { round: 1 } });
        await saveAnswer(tx, idem, { uid });
        return uid;
      }),
    );
  } catch (err) {
    if (isUniqueViolation(err, 'nonce')) throw duplicateNonce();
    throw err;
  }
  queueOn(ctx, chainId).notify(ALLOCATE_JOB);
  return { uid };
}

export async function getAllocation(ctx: Ctx, appUid: string, uid: string) {
  const a = isUid(uid) ? await ctx.db.selectFrom('allocations').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst() : undefined;
  if (!a) throw ApiError.notFound('Allocation');
  return allocationView(a);
}

/** Allocations to a user, a page at a time (newest first); none for an unknown user. */
export async function listAllocationsOfUser(ctx: Ctx, appUid: string, userUid: string, page: PageRequest = {}) {
  const rows = await keysetPage(
    ctx.db.selectFrom('allocations').selectAll().where('app_uid', '=', appUid).where('to_user_uid', '=', userUid),
    'allocations',
    page,
  ).execute();
  return pageOf(rows, page, allocationView);
}

// ------------------------------------------------------------------------------------------ claims

export interface ClaimRequest {
  reward_uid: string;
  from_user_uid: string;
  to_address: string;
}

/**
 * POST /reward/claim. Only records the claim: its amount is decided when it executes (the whole
 * unclaimed balance at that time). The reward row is share-locked so that a withdrawal requested
 * concurrently either sees this claim (and waits for it) or is seen by it (and the claim is refused).
 */
export async function requestClaim(ctx: Ctx, appUid: string, req: ClaimRequest, idem?: IdempotentWrite): Promise<{ uid: string }> {
  const to = parseAddressField('to_address', req.to_address);
  if (!isUid(req.reward_uid)) throw rewardNotFound();
  let chainId = 0;
  const uid = await withNewUid('claims', (uid) =>
    ctx.db.transaction().execute(async (tx) => {
      const reward = await lockReward(ctx, tx, req.reward_uid, 'share', appUid);
      if (!reward) throw rewardNotFound();
      if (reward.withdraw_status !== null) throw withdrawnError();
      const user = await tx.selectFrom('users').select('uid').where('uid', '=', req.from_user_uid).where('app_uid', '=', appUid).executeTakeFirst();
      if (!user) throw userNotFound();
      const t = nowIso();
      await tx
        .insertInto('claims')
        .values({
          uid,
          app_uid: appUid,
          reward_uid: reward.uid,
          from_user_uid: user.uid,
          to_address: to,
          amount: null,
          status: 'pending',
          error: null,
          tx_id: null,
          rounds: 0,
          created_at: t,
          updated_at: t,
        })
        .execute();
      chainId = Number(reward.chain_id);
      await queueOn(ctx, chainId).enqueue(tx, { kind: CLAIM_JOB, ref: uid, groupKey: claimGroup(reward.uid, user.uid) });
      await saveAnswer(tx, idem, { uid });
      return uid;
    }),
  );
  queueOn(ctx, chainId).notify(CLAIM_JOB);
  return { uid };
}

export async function getClaim(ctx: Ctx, appUid: string, uid: string) {
  const c = isUid(uid) ? await ctx.db.selectFrom('claims').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst() : undefined;
  if (!c) throw ApiError.notFound('Claim');
  return claimView(c);
}

/** Claims by a user, a page at a time (newest first); none for an unknown user. */
export async function listClaimsOfUser(ctx: Ctx, appUid: string, userUid: string, page: PageRequest = {}) {
  const rows = await keysetPage(
    ctx.db.selectFrom('claims').selectAll().where('app_uid', '=', appUid).where('from_user_uid', '=', userUid),
    'claims',
    page,
  ).execute();
  return pageOf(rows, page, claimView);
}

// ---------------------------------------------------------------------------------------- withdraw

/**
 * Operator: sends everything the pool still holds (unclaimed allocations included) to the reward's
 * withdraw_receiver and closes it. From now on allocations and claims are refused; the ones accepted
 * before are executed first (the withdraw job waits for them), so none of them fails half-way.
 */
export async function requestWithdraw(ctx: Ctx, appUid: string, rewardUid: string) {
  if (!isUid(rewardUid)) throw rewardNotFound();
  const row = await ctx.db.transaction().execute(async (tx) => {
    const reward = await lockReward(ctx, tx, rewardUid, 'update', appUid);
    if (!reward) throw rewardNotFound();
    if (reward.withdraw_status !== null)
      throw ApiError.of(
        'already_withdrawn',
        reward.withdraw_status === 'done' ? 'Reward has already been withdrawn.' : 'Withdrawal of this reward is already under way.',
      );
    await tx.updateTable('rewards').set({ withdraw_status: 'requested' }).where('uid', '=', reward.uid).execute();
    await queueOn(ctx, Number(reward.chain_id)).enqueue(tx, { kind: WITHDRAW_JOB, ref: reward.uid });
    return { ...reward, withdraw_status: 'requested' as const };
  });
  queueOn(ctx, Number(row.chain_id)).notify(WITHDRAW_JOB);
  return rewardAdminView(row, ctx.installation);
}
