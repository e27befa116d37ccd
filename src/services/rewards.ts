// Rewards: an ERC-20 pool contract (MintworksRewards) per reward, deployed as a job; allocations
// accepted against a budget kept in the database and written on chain in batches; claims executed as
// the user's own forwarded (gasless) call; a final withdrawal of the remainder by the operator.
//
// Where the truth lives:
//   - the budget (what may still be allocated) and each user's ledger are database rows, changed under
//     a row lock in the same transaction as the allocation/claim they account for, so concurrent
//     requests can neither oversubscribe the pool nor lose an update;
//   - what a claim paid is what the contract's Claimed event says; the ledger records exactly that.
// The pure rules (balance arithmetic, claim and allocation state machines) are in domain/rewards.ts.
import { encodeDeployData, encodeFunctionData, getAddress, parseEventLogs, type Address, type Hex, type TransactionReceipt } from 'viem';
import type { Ctx } from './context.js';
import type { Job } from '../jobs/queue.js';
import type { JobHandler } from '../jobs/worker.js';
import type { Tx } from '../store/db.js';
import { isUniqueViolation } from '../store/db.js';
import { artifact } from '../chain/artifacts.js';
import { claimOutcome, type ChainTxRow, type TxOutcome } from '../chain/sender.js';
import { allocateForwarderNonce, encodeForwardBatch, forwardBatchGas, forwardResults, resyncForwarderNonce, signForwardRequest } from '../chain/forward.js';
import { ApiError } from '../util/errors.js';
import { isUid, newUid } from '../util/ids.js';
import { nowIso } from '../util/time.js';
import { AmountError, parseAmount, unitsFromDb, unitsToDb } from '../domain/amounts.js';
import {
  allocationFailureReason,
  allocationOutcomeStep,
  balanceOf,
  chainRef,
  checkBudget,
  claimableOf,
  claimOutcomeStep,
  nextClaimStep,
  type Ledger,
} from '../domain/rewards.js';
import { emitEvent } from './events.js';
import { createWalletNow } from './wallets.js';
import { parseAddressField } from '../domain/address.js';
import { allocationView, balanceView, claimView, rewardAdminView, rewardView, type AllocationRow, type ClaimRow, type RewardRow } from './reward-views.js';

export const REWARD_DEPLOY_JOB = 'reward.deploy';
export const ALLOCATE_JOB = 'reward.allocate';
export const CLAIM_JOB = 'reward.claim';
export const WITHDRAW_JOB = 'reward.withdraw';
// Chain transaction kinds (ChainSender.onOutcome keys).
const DEPLOY_TX = 'reward.deploy';
const ALLOCATE_TX = 'reward.allocate';
const CLAIM_TX = 'reward.claim';
const WITHDRAW_TX = 'reward.withdraw';

const MAX_ALLOCATION_ROUNDS = 5;
const MAX_CLAIM_ROUNDS = 5;
/** Gas the forwarded claim() may use: an ERC-20 transfer, three storage writes and an event (~70k). */
const CLAIM_GAS = 150_000n;
/** A forwarded request that sits unmined longer than this expires and is signed again. */
const FORWARD_TTL_S = 3600;

// ------------------------------------------------------------------------------------------ errors

const rewardNotFound = () => ApiError.notFound('Reward');
const userNotFound = () => ApiError.client(404, 'not_found', 'User not found.');
const duplicateNonce = () => ApiError.client(400, 'duplicate_nonce', 'An allocation with this nonce already exists for this reward.', 'nonce');
const withdrawnError = () => ApiError.client(400, 'reward_withdrawn', 'Reward has been withdrawn: it accepts no more allocations or claims.');

// --------------------------------------------------------------------------------------- helpers

/** The reward row, locked for the rest of `tx` on PostgreSQL (SQLite serialises transactions anyway). */
async function lockReward(ctx: Ctx, tx: Tx, uid: string, mode: 'update' | 'share', appUid?: string): Promise<RewardRow | undefined> {
  let q = tx.selectFrom('rewards').selectAll().where('uid', '=', uid);
  if (appUid !== undefined) q = q.where('app_uid', '=', appUid);
  if (ctx.dialect === 'postgres') q = mode === 'update' ? q.forUpdate() : q.forShare();
  return q.executeTakeFirst();
}

interface LedgerRow extends Ledger {
  claimUid: string | null;
}

/** The (reward, user) ledger row, locked; created with zeros when `create` and missing. */
async function lockLedger(ctx: Ctx, tx: Tx, rewardUid: string, userUid: string, create: boolean): Promise<LedgerRow | null> {
  if (create) {
    await tx
      .insertInto('reward_balances')
      .values({ reward_uid: rewardUid, user_uid: userUid, allocated: '0', allocated_done: '0', claimed: '0', claim_uid: null, updated_at: Date.now() })
      .onConflict((oc) => oc.columns(['reward_uid', 'user_uid']).doNothing())
      .execute();
  }
  let q = tx.selectFrom('reward_balances').selectAll().where('reward_uid', '=', rewardUid).where('user_uid', '=', userUid);
  if (ctx.dialect === 'postgres') q = q.forUpdate();
  const r = await q.executeTakeFirst();
  if (!r) return null;
  return { allocated: unitsFromDb(r.allocated), allocatedDone: unitsFromDb(r.allocated_done), claimed: unitsFromDb(r.claimed), claimUid: r.claim_uid };
}

async function writeLedger(tx: Tx, rewardUid: string, userUid: string, l: LedgerRow): Promise<void> {
  await tx
    .updateTable('reward_balances')
    .set({ allocated: unitsToDb(l.allocated), allocated_done: unitsToDb(l.allocatedDone), claimed: unitsToDb(l.claimed), claim_uid: l.claimUid, updated_at: Date.now() })
    .where('reward_uid', '=', rewardUid)
    .where('user_uid', '=', userUid)
    .execute();
}

const claimGroup = (rewardUid: string, userUid: string) => `${rewardUid}:${userUid}`;

function receiptOf(ctx: Ctx, row: ChainTxRow, outcome: TxOutcome): Promise<TransactionReceipt | null> {
  if (outcome.receipt) return Promise.resolve(outcome.receipt);
  // Re-applied after a restart, or dropped: ask the node (null when it has no such transaction).
  return ctx.sender!.client.getTransactionReceipt({ hash: row.hash as Hex }).catch(() => null);
}


// ------------------------------------------------------------------------------------------ create

export interface NewReward {
  name: string;
  token_name: string;
  token_symbol: string;
  supply: unknown; // a JSON number or numeric string, as for allocations
  withdraw_receiver?: string | null;
  description?: string | null;
}

/**
 * Creates a reward and queues its contract deployment (status deploying -> deployed). Without a
 * withdraw_receiver the remainder goes to the service's deployer account, whose key derives from the
 * installation's seed (so the operator can always move it on).
 */
export async function createReward(ctx: Ctx, appUid: string, input: NewReward): Promise<{ uid: string }> {
  const problems: { field: string; code: string; message: string }[] = [];
  if (!input.name?.trim()) problems.push({ field: 'name', code: 'required', message: 'Name must not be empty.' });
  if (!input.token_name?.trim() || input.token_name.length > 100) problems.push({ field: 'token_name', code: 'invalid', message: 'Token name must be 1-100 characters.' });
  if (!/^[A-Za-z0-9]{1,16}$/.test(input.token_symbol ?? '')) problems.push({ field: 'token_symbol', code: 'invalid', message: 'Token symbol must be 1-16 letters or digits.' });
  let supply = 0n;
  try {
    supply = parseAmount(input.supply);
  } catch (err) {
    if (!(err instanceof AmountError)) throw err;
    problems.push({ field: 'supply', code: 'invalid', message: err.message });
  }
  if (problems.length) throw ApiError.validation(problems);
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
      })
      .execute();
    await ctx.queue.enqueue(tx, { kind: REWARD_DEPLOY_JOB, ref: uid });
  });
  ctx.queue.notify(REWARD_DEPLOY_JOB);
  return { uid };
}

async function rewardRow(ctx: Ctx, appUid: string, uid: string): Promise<RewardRow> {
  if (!isUid(uid)) throw rewardNotFound();
  const r = await ctx.db.selectFrom('rewards').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!r) throw rewardNotFound();
  return r;
}

export async function getReward(ctx: Ctx, appUid: string, uid: string) {
  return rewardView(await rewardRow(ctx, appUid, uid), ctx.config);
}

export async function getRewardAdmin(ctx: Ctx, appUid: string, uid: string) {
  return rewardAdminView(await rewardRow(ctx, appUid, uid), ctx.config);
}

export async function listRewards(ctx: Ctx, appUid: string) {
  const rows = await ctx.db.selectFrom('rewards').selectAll().where('app_uid', '=', appUid).orderBy('created_at', 'desc').limit(1000).execute();
  return rows.map((r) => rewardAdminView(r, ctx.config));
}

// ----------------------------------------------------------------------------------------- balance

/** GET /reward/balance (#18). An unknown user has nothing: amount 0 (lists answer [] likewise). */
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
 * POST /reward/allocate (#19). In one transaction, under the reward row's lock: the nonce is checked
 * (and guarded by a unique index), the budget is reduced, the user's wallet is created if needed, the
 * allocation, its ledger entry and its job are written. A refused request changes nothing.
 */
export async function allocate(ctx: Ctx, appUid: string, req: AllocationRequest): Promise<{ uid: string }> {
  if (req.amount <= 0n) throw new Error('allocate: amount must be positive');
  if (!isUid(req.reward_uid)) throw rewardNotFound();
  const nonce = String(req.nonce);
  const uid = newUid();
  try {
    await ctx.db.transaction().execute(async (tx) => {
      const reward = await lockReward(ctx, tx, req.reward_uid, 'update', appUid);
      if (!reward) throw rewardNotFound();
      if (reward.withdraw_status !== null) throw withdrawnError();
      const user = await tx.selectFrom('users').select(['uid', 'wallet_address']).where('uid', '=', req.to_user_uid).where('app_uid', '=', appUid).executeTakeFirst();
      if (!user) throw userNotFound();
      const dup = await tx.selectFrom('allocations').select('uid').where('reward_uid', '=', reward.uid).where('nonce', '=', nonce).executeTakeFirst();
      if (dup) throw duplicateNonce();
      const budget = checkBudget(unitsFromDb(reward.unallocated), req.amount);
      if (!budget.ok) throw ApiError.client(400, 'insufficient_supply', budget.message, 'amount');
      await tx.updateTable('rewards').set({ unallocated: unitsToDb(budget.left) }).where('uid', '=', reward.uid).execute();
      const address = user.wallet_address ?? (await createWalletNow(ctx, tx, user.uid));
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
      await ctx.queue.enqueue(tx, { kind: ALLOCATE_JOB, ref: uid, groupKey: reward.uid, payload: { round: 1 } });
    });
  } catch (err) {
    if (isUniqueViolation(err, 'nonce')) throw duplicateNonce();
    throw err;
  }
  ctx.queue.notify(ALLOCATE_JOB);
  return { uid };
}

export async function getAllocation(ctx: Ctx, appUid: string, uid: string) {
  const a = isUid(uid) ? await ctx.db.selectFrom('allocations').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst() : undefined;
  if (!a) throw ApiError.notFound('Allocation');
  return allocationView(a);
}

/** Allocations to a user, newest first; [] for an unknown user. */
export async function listAllocationsOfUser(ctx: Ctx, appUid: string, userUid: string) {
  const rows = await ctx.db.selectFrom('allocations').selectAll().where('app_uid', '=', appUid).where('to_user_uid', '=', userUid).orderBy('created_at', 'desc').orderBy('uid', 'desc').limit(1000).execute();
  return rows.map(allocationView);
}

// ------------------------------------------------------------------------------------------ claims

export interface ClaimRequest {
  reward_uid: string;
  from_user_uid: string;
  to_address: string;
}

/**
 * POST /reward/claim (#22). Only records the claim: its amount is decided when it executes (the whole
 * unclaimed balance at that time). The reward row is share-locked so that a withdrawal requested
 * concurrently either sees this claim (and waits for it) or is seen by it (and the claim is refused).
 */
export async function requestClaim(ctx: Ctx, appUid: string, req: ClaimRequest): Promise<{ uid: string }> {
  const to = parseAddressField('to_address', req.to_address);
  if (!isUid(req.reward_uid)) throw rewardNotFound();
  const uid = newUid();
  await ctx.db.transaction().execute(async (tx) => {
    const reward = await lockReward(ctx, tx, req.reward_uid, 'share', appUid);
    if (!reward) throw rewardNotFound();
    if (reward.withdraw_status !== null) throw withdrawnError();
    const user = await tx.selectFrom('users').select('uid').where('uid', '=', req.from_user_uid).where('app_uid', '=', appUid).executeTakeFirst();
    if (!user) throw userNotFound();
    const t = nowIso();
    await tx
      .insertInto('claims')
      .values({ uid, app_uid: appUid, reward_uid: reward.uid, from_user_uid: user.uid, to_address: to, amount: null, status: 'pending', error: null, tx_id: null, rounds: 0, created_at: t, updated_at: t })
      .execute();
    await ctx.queue.enqueue(tx, { kind: CLAIM_JOB, ref: uid, groupKey: claimGroup(reward.uid, user.uid) });
  });
  ctx.queue.notify(CLAIM_JOB);
  return { uid };
}

export async function getClaim(ctx: Ctx, appUid: string, uid: string) {
  const c = isUid(uid) ? await ctx.db.selectFrom('claims').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst() : undefined;
  if (!c) throw ApiError.notFound('Claim');
  return claimView(c);
}

/** Claims by a user, newest first; [] for an unknown user. */
export async function listClaimsOfUser(ctx: Ctx, appUid: string, userUid: string) {
  const rows = await ctx.db.selectFrom('claims').selectAll().where('app_uid', '=', appUid).where('from_user_uid', '=', userUid).orderBy('created_at', 'desc').orderBy('uid', 'desc').limit(1000).execute();
  return rows.map(claimView);
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
    if (reward.withdraw_status !== null) throw ApiError.client(400, 'already_withdrawn', reward.withdraw_status === 'done' ? 'Reward has already been withdrawn.' : 'Withdrawal of this reward is already under way.');
    await tx.updateTable('rewards').set({ withdraw_status: 'requested' }).where('uid', '=', reward.uid).execute();
    await ctx.queue.enqueue(tx, { kind: WITHDRAW_JOB, ref: reward.uid });
    return { ...reward, withdraw_status: 'requested' as const };
  });
  ctx.queue.notify(WITHDRAW_JOB);
  return rewardAdminView(row, ctx.config);
}

// ============================================================================================ jobs

export function rewardDeployJobHandler(ctx: Ctx): JobHandler {
  const sender = ctx.sender!;
  const { abi, bytecode } = artifact('MintworksRewards');
  return {
    kind: REWARD_DEPLOY_JOB,
    batchSize: 10,
    leaseMs: 60_000,
    pollMs: 1000,
    async handle(jobs) {
      for (const job of jobs) {
        const r = await ctx.db.selectFrom('rewards').selectAll().where('uid', '=', job.ref).executeTakeFirst();
        const pendingTx = await ctx.db.selectFrom('chain_txs').select('id').where('kind', '=', DEPLOY_TX).where('ref', '=', job.ref).where('handled', '=', 0).executeTakeFirst();
        if (!r || r.status === 'deployed' || pendingTx) {
          await ctx.queue.complete(ctx.db, job.id);
          continue;
        }
        // Every relayer is an operator: allocations and withdrawals go out from whichever is next.
        const data = encodeDeployData({
          abi,
          bytecode,
          args: [r.token_name, r.token_symbol, unitsFromDb(r.supply), getAddress(r.withdraw_receiver), ctx.forwarder!, sender.relayers.map((x) => x.address)],
        });
        const gas = await sender.client.estimateGas({ account: sender.relayers[0].address, data });
        const row = await ctx.db.transaction().execute(async (tx) => {
          const rec = await sender.record(tx, { kind: DEPLOY_TX, ref: r.uid, payload: { reward_uid: r.uid }, to: null, data, gas: (gas * 12n) / 10n });
          await ctx.queue.complete(tx, job.id);
          return rec;
        });
        await sender.broadcast([row]);
      }
    },
  };
}

function rewardDeployOutcome(ctx: Ctx) {
  return async (row: ChainTxRow, outcome: TxOutcome): Promise<void> => {
    let deployed = false;
    await ctx.db.transaction().execute(async (tx) => {
      if (!(await claimOutcome(tx, row.id))) return;
      if (outcome.ok && row.contract_address) {
        await tx.updateTable('rewards').set({ status: 'deployed', contract_address: row.contract_address }).where('uid', '=', row.ref).execute();
        await ctx.queue.wakeGroup(tx, ALLOCATE_JOB, row.ref); // allocations accepted while deploying
        deployed = true;
        ctx.log.info({ reward: row.ref, address: getAddress(row.contract_address as Address) }, 'reward contract deployed');
      } else {
        ctx.log.error({ reward: row.ref, reason: outcome.reason }, 'reward deployment failed, trying again');
        await ctx.queue.enqueue(tx, { kind: REWARD_DEPLOY_JOB, ref: row.ref, runAt: Date.now() + 5000 });
      }
    });
    if (deployed) ctx.queue.notify(ALLOCATE_JOB);
  };
}

// ------------------------------------------------------------------------------- allocation job

interface AllocationItem { uid: string; to: string; amount: string; ref: Hex }
interface AllocationPayload { reward_uid: string; contract: string; items: AllocationItem[]; rounds: Record<string, number> }
interface AllocationJobPayload { round?: number; solo?: boolean }

/** Gas for allocateBatch: ~50k per new allocation measured; generous so a batch never runs short. */
export const allocationGas = (n: number): bigint => BigInt(80_000 + 80_000 * n);

/**
 * Writes pending allocations on chain, many per transaction (allocateBatch) when many are queued for
 * one reward. Allocations of a reward still deploying wait for the deployment, which wakes them.
 */
export function allocationJobHandler(ctx: Ctx): JobHandler {
  const sender = ctx.sender!;
  const { abi } = artifact('MintworksRewards');
  return {
    kind: ALLOCATE_JOB,
    batchSize: Math.min(ctx.config.mintBatchSize, 100),
    leaseMs: 10_000,
    pollMs: 500,
    async handle(jobs) {
      const rows = await ctx.db
        .selectFrom('allocations')
        .innerJoin('rewards', 'rewards.uid', 'allocations.reward_uid')
        .select(['allocations.uid', 'allocations.status', 'allocations.tx_id', 'allocations.to_address', 'allocations.amount', 'allocations.reward_uid', 'rewards.status as reward_status', 'rewards.contract_address'])
        .where('allocations.uid', 'in', jobs.map((j) => j.ref))
        .execute();
      const byUid = new Map(rows.map((r) => [r.uid, r]));
      const groups: { rewardUid: string; contract: string; jobs: Job[]; items: AllocationItem[] }[] = [];
      const shared = new Map<string, (typeof groups)[number]>();
      for (const job of jobs) {
        const a = byUid.get(job.ref);
        if (!a || a.status !== 'pending' || a.tx_id !== null) {
          await ctx.queue.complete(ctx.db, job.id); // done, failed, gone, or already in a transaction
          continue;
        }
        if (a.reward_status !== 'deployed' || !a.contract_address) {
          await ctx.queue.defer(ctx.db, job.id, 5000); // woken by the deployment
          continue;
        }
        const item: AllocationItem = { uid: a.uid, to: a.to_address, amount: a.amount, ref: chainRef('allocation', a.uid) };
        // A retry after a failed batch goes alone, so a bad allocation cannot sink the others again.
        if ((job.payload as AllocationJobPayload).solo) {
          groups.push({ rewardUid: a.reward_uid, contract: a.contract_address, jobs: [job], items: [item] });
          continue;
        }
        let g = shared.get(a.reward_uid);
        if (!g) {
          g = { rewardUid: a.reward_uid, contract: a.contract_address, jobs: [], items: [] };
          shared.set(a.reward_uid, g);
          groups.push(g);
        }
        g.jobs.push(job);
        g.items.push(item);
      }
      for (const g of groups) {
        const data = encodeFunctionData({
          abi,
          functionName: 'allocateBatch',
          args: [g.items.map((i) => getAddress(i.to)), g.items.map((i) => BigInt(i.amount)), g.items.map((i) => i.ref)],
        });
        const rounds = Object.fromEntries(g.jobs.map((j) => [j.ref, (j.payload as AllocationJobPayload).round ?? 1]));
        const payload: AllocationPayload = { reward_uid: g.rewardUid, contract: g.contract, items: g.items, rounds };
        const row = await ctx.db.transaction().execute(async (tx) => {
          const rec = await sender.record(tx, { kind: ALLOCATE_TX, ref: g.rewardUid, payload, to: g.contract as Address, data, gas: allocationGas(g.items.length) });
          await tx.updateTable('allocations').set({ tx_id: rec.id, updated_at: nowIso() }).where('uid', 'in', g.items.map((i) => i.uid)).execute();
          for (const j of g.jobs) await ctx.queue.complete(tx, j.id);
          return rec;
        });
        await sender.broadcast([row]);
      }
    },
    // The job kept failing before any transaction was recorded (e.g. the node unreachable for hours):
    // fail the allocation rather than leave it, and the claims and withdrawal waiting for it, pending.
    async onDead(job, error) {
      await ctx.db.transaction().execute(async (tx) => {
        const a = await tx.selectFrom('allocations').selectAll().where('uid', '=', job.ref).executeTakeFirst();
        if (!a || a.status !== 'pending' || a.tx_id !== null) return;
        const reward = (await lockReward(ctx, tx, a.reward_uid, 'update'))!;
        await failAllocation(ctx, tx, reward, a, `not sent to the chain: ${error}`);
      });
      ctx.queue.notify(CLAIM_JOB);
    },
  };
}

/**
 * Applies an allocation transaction. An allocation is done when the chain shows it: its Allocated
 * event in this receipt, or else `usedRef(ref)` (mined by an earlier transaction, or re-mined after a
 * rewind). Otherwise it is sent again (alone), and after MAX_ALLOCATION_ROUNDS it fails with the
 * contract's reason, giving its amount back to the budget.
 */
function allocationOutcome(ctx: Ctx) {
  const { abi } = artifact('MintworksRewards');
  const client = ctx.sender!.client;
  return async (row: ChainTxRow, outcome: TxOutcome): Promise<void> => {
    const p = JSON.parse(row.payload) as AllocationPayload;
    const contract = p.contract as Address;
    const receipt = await receiptOf(ctx, row, outcome);
    const seen = new Set<string>();
    if (receipt?.status === 'success') {
      for (const log of parseEventLogs({ abi, logs: receipt.logs, eventName: 'Allocated' })) {
        if (log.address.toLowerCase() === p.contract.toLowerCase()) seen.add((log.args as { ref: Hex }).ref.toLowerCase());
      }
    }
    const onChain = new Map<string, boolean>();
    const reasons = new Map<string, string>();
    for (const item of p.items) {
      let ok = seen.has(item.ref.toLowerCase());
      if (!ok) ok = (await client.readContract({ address: contract, abi, functionName: 'usedRef', args: [item.ref] })) === true;
      onChain.set(item.uid, ok);
      if (!ok && (p.rounds[item.uid] ?? 1) >= MAX_ALLOCATION_ROUNDS) {
        // About to give up: ask the contract why, by simulating the call alone.
        const errorName = await client
          .simulateContract({ address: contract, abi, functionName: 'allocate', args: [getAddress(item.to), BigInt(item.amount), item.ref], account: ctx.sender!.relayers[0].address })
          .then(() => null)
          .catch((err: unknown) => revertName(err));
        reasons.set(item.uid, allocationFailureReason(errorName));
      }
    }
    const wake: string[] = [];
    let retried = false;
    await ctx.db.transaction().execute(async (tx) => {
      if (!(await claimOutcome(tx, row.id))) return;
      // Lock order reward -> ledger, as in allocate(): a refund needs the reward row.
      const reward = await lockReward(ctx, tx, p.reward_uid, 'update');
      if (!reward) return;
      const allocs = await tx.selectFrom('allocations').selectAll().where('uid', 'in', p.items.map((i) => i.uid)).execute();
      for (const a of allocs) {
        const step = allocationOutcomeStep({ status: a.status, onChain: onChain.get(a.uid) ?? false, rounds: p.rounds[a.uid] ?? 1, maxRounds: MAX_ALLOCATION_ROUNDS, batched: p.items.length > 1 });
        if (step.do === 'ignore') continue;
        if (step.do !== 'done' && a.tx_id !== row.id) continue; // a newer transaction carries it now
        const t = nowIso();
        if (step.do === 'done') {
          const ledger = (await lockLedger(ctx, tx, a.reward_uid, a.to_user_uid, true))!;
          await tx.updateTable('allocations').set({ status: 'done', tx_id: row.id, error: null, updated_at: t }).where('uid', '=', a.uid).execute();
          ledger.allocatedDone += unitsFromDb(a.amount);
          await writeLedger(tx, a.reward_uid, a.to_user_uid, ledger);
          await emitEvent(tx, a.app_uid, 'reward.allocated', { allocation: allocationView({ ...a, status: 'done', tx_id: row.id, error: null, updated_at: t }) });
          wake.push(claimGroup(a.reward_uid, a.to_user_uid));
        } else if (step.do === 'retry') {
          await tx.updateTable('allocations').set({ tx_id: null, updated_at: t }).where('uid', '=', a.uid).execute();
          await ctx.queue.enqueue(tx, { kind: ALLOCATE_JOB, ref: a.uid, groupKey: a.reward_uid, payload: { round: (p.rounds[a.uid] ?? 1) + 1, solo: step.solo } satisfies AllocationJobPayload });
          retried = true;
        } else {
          await failAllocation(ctx, tx, reward, a, reasons.get(a.uid) ?? allocationFailureReason(null));
          wake.push(claimGroup(a.reward_uid, a.to_user_uid));
        }
      }
      for (const g of new Set(wake)) await ctx.queue.wakeGroup(tx, CLAIM_JOB, g); // claims waiting for these
    });
    if (retried) {
      ctx.log.warn({ tx: row.id, reward: p.reward_uid, reason: outcome.reason ?? 'not on chain' }, 'allocation not confirmed on chain, sending again');
      ctx.queue.notify(ALLOCATE_JOB);
    }
    if (wake.length) ctx.queue.notify(CLAIM_JOB);
  };
}

/**
 * Marks an allocation failed. It never reached the chain, so its amount goes back to the reward's
 * budget and out of the user's balance. `reward` must be locked by `tx` (lock order reward -> ledger).
 */
async function failAllocation(ctx: Ctx, tx: Tx, reward: RewardRow, a: AllocationRow, reason: string): Promise<void> {
  const amount = unitsFromDb(a.amount);
  await tx.updateTable('allocations').set({ status: 'failed', error: reason, tx_id: null, updated_at: nowIso() }).where('uid', '=', a.uid).execute();
  reward.unallocated = unitsToDb(unitsFromDb(reward.unallocated) + amount);
  await tx.updateTable('rewards').set({ unallocated: reward.unallocated }).where('uid', '=', reward.uid).execute();
  const ledger = await lockLedger(ctx, tx, a.reward_uid, a.to_user_uid, true);
  if (ledger) {
    ledger.allocated -= amount;
    await writeLedger(tx, a.reward_uid, a.to_user_uid, ledger);
  }
  await ctx.queue.wakeGroup(tx, CLAIM_JOB, claimGroup(a.reward_uid, a.to_user_uid)); // claims waiting for it
  ctx.log.error({ allocation: a.uid, reward: a.reward_uid, reason }, 'allocation failed');
}

/** The custom error name of a reverted simulation (viem decodes it from the ABI), if any. */
function revertName(err: unknown): string | null {
  let e = err as { data?: { errorName?: string }; cause?: unknown } | undefined;
  for (let i = 0; e && i < 10; i++) {
    if (e.data?.errorName) return e.data.errorName;
    e = e.cause as typeof e;
  }
  return null;
}

// ------------------------------------------------------------------------------------ claim job

interface ClaimPayload {
  claim_uid: string;
  reward_uid: string;
  user_uid: string;
  user_address: string; // lower case
  contract: string;
  forwarder: string;
  nonce: string; // the forwarder nonce of the request (decimal)
  ref: Hex;
}

/**
 * Executes claims one at a time per (reward, user): takes the ledger row's lock and claim slot,
 * decides from the facts (domain/rewards.ts nextClaimStep) and either completes a zero claim at once,
 * waits, or signs the user's forwarded claim(to, ref) and hands it to the user's relayer.
 */
export function claimJobHandler(ctx: Ctx): JobHandler {
  const sender = ctx.sender!;
  const rewardsAbi = artifact('MintworksRewards').abi;
  const forwarderAbi = artifact('MintworksForwarder').abi;
  return {
    kind: CLAIM_JOB,
    batchSize: 50,
    leaseMs: 15_000,
    pollMs: 500,
    async handle(jobs) {
      const out: ChainTxRow[] = [];
      let woke = false;
      for (const job of jobs) {
        const result = await ctx.db.transaction().execute(async (tx) => {
          const c = await tx.selectFrom('claims').selectAll().where('uid', '=', job.ref).executeTakeFirst();
          if (!c) {
            await ctx.queue.complete(tx, job.id);
            return null;
          }
          const reward = await tx.selectFrom('rewards').selectAll().where('uid', '=', c.reward_uid).executeTakeFirstOrThrow();
          const user = await tx.selectFrom('users').select(['uid', 'wallet_address']).where('uid', '=', c.from_user_uid).executeTakeFirstOrThrow();
          const ledger = await lockLedger(ctx, tx, c.reward_uid, c.from_user_uid, false);
          const earlier = await tx
            .selectFrom('allocations')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('reward_uid', '=', c.reward_uid)
            .where('to_user_uid', '=', c.from_user_uid)
            .where('status', '=', 'pending')
            .where('created_at', '<=', c.created_at)
            .executeTakeFirstOrThrow();
          const step = nextClaimStep({
            claimUid: c.uid,
            status: c.status,
            txInFlight: c.tx_id !== null,
            rewardDeployed: reward.status === 'deployed' && reward.contract_address !== null,
            poolWithdrawn: reward.withdraw_status === 'done',
            earlierAllocationsPending: Number(earlier.n),
            slotHolder: ledger?.claimUid ?? null,
            claimable: ledger ? claimableOf(ledger) : 0n,
            hasWallet: user.wallet_address !== null,
          });
          switch (step.do) {
            case 'skip':
              await ctx.queue.complete(tx, job.id);
              return null;
            case 'wait':
              // Allocations and the slot wake this group when they settle; the delay is a fallback.
              await ctx.queue.defer(tx, job.id, step.why === 'deployment' ? 2000 : 5000);
              return null;
            case 'complete':
            case 'fail':
              await finishClaim(ctx, tx, c, step.do === 'complete' ? { amount: 0n } : { reason: step.reason });
              await ctx.queue.complete(tx, job.id);
              woke = true;
              return null;
            case 'send': {
              const account = ctx.keys.user(user.uid);
              const address = account.address.toLowerCase();
              if (address !== user.wallet_address) throw new Error(`wallet of user ${user.uid} does not match its derived key`);
              const forwarder = ctx.forwarder!;
              const nonce = await allocateForwarderNonce(tx, account.address, () =>
                sender.client.readContract({ address: forwarder, abi: forwarderAbi, functionName: 'nonces', args: [account.address] }) as Promise<bigint>,
              );
              const ref = chainRef('claim', c.uid);
              const request = await signForwardRequest(account, forwarder, sender.chainId, {
                to: reward.contract_address as Address,
                data: encodeFunctionData({ abi: rewardsAbi, functionName: 'claim', args: [getAddress(c.to_address), ref] }),
                gas: CLAIM_GAS,
                nonce,
                deadline: Math.floor(Date.now() / 1000) + FORWARD_TTL_S,
              });
              // All forwarded requests of a user ride one relayer, so their forwarder nonces stay in order.
              const relayer = sender.relayerFor(address);
              const payload: ClaimPayload = { claim_uid: c.uid, reward_uid: c.reward_uid, user_uid: user.uid, user_address: address, contract: reward.contract_address!, forwarder, nonce: nonce.toString(), ref };
              const rec = await sender.record(tx, { kind: CLAIM_TX, ref: c.uid, payload, to: forwarder, data: encodeForwardBatch([request], relayer.address), gas: forwardBatchGas([request]), signer: relayer });
              await tx.updateTable('claims').set({ tx_id: rec.id, rounds: c.rounds + 1, updated_at: nowIso() }).where('uid', '=', c.uid).execute();
              await writeLedger(tx, c.reward_uid, c.from_user_uid, { ...ledger!, claimUid: c.uid });
              await ctx.queue.complete(tx, job.id);
              return rec;
            }
          }
        });
        if (result) out.push(result);
      }
      if (out.length) await sender.broadcast(out);
      if (woke) ctx.queue.notify(CLAIM_JOB);
    },
    async onDead(job, error) {
      await ctx.db.transaction().execute(async (tx) => {
        const c = await tx.selectFrom('claims').selectAll().where('uid', '=', job.ref).executeTakeFirst();
        if (c && c.status === 'pending' && c.tx_id === null) await finishClaim(ctx, tx, c, { reason: `not sent to the chain: ${error}` });
      });
      ctx.queue.notify(CLAIM_JOB);
    },
  };
}

/**
 * Closes a claim: done with the amount the chain paid (0 when nothing was claimable), or failed. Frees
 * the user's claim slot and wakes the claims waiting for it.
 */
async function finishClaim(ctx: Ctx, tx: Tx, c: ClaimRow, end: { amount: bigint; txId?: number } | { reason: string }): Promise<void> {
  const ledger = await lockLedger(ctx, tx, c.reward_uid, c.from_user_uid, false);
  if (ledger) {
    if ('amount' in end) ledger.claimed += end.amount;
    if (ledger.claimUid === c.uid) ledger.claimUid = null;
    await writeLedger(tx, c.reward_uid, c.from_user_uid, ledger);
  }
  const t = nowIso();
  const done: ClaimRow =
    'amount' in end
      ? { ...c, status: 'done', amount: unitsToDb(end.amount), tx_id: end.txId ?? c.tx_id, error: null, updated_at: t }
      : { ...c, status: 'failed', error: end.reason, tx_id: null, updated_at: t };
  await tx.updateTable('claims').set({ status: done.status, amount: done.amount, tx_id: done.tx_id, error: done.error, updated_at: t }).where('uid', '=', c.uid).execute();
  if (done.status === 'done') await emitEvent(tx, c.app_uid, 'reward.claimed', { claim: claimView(done) });
  else ctx.log.error({ claim: c.uid, reward: c.reward_uid, reason: done.error }, 'claim failed');
  await ctx.queue.wakeGroup(tx, CLAIM_JOB, claimGroup(c.reward_uid, c.from_user_uid));
}

/**
 * Applies a claim transaction: the Claimed event with the claim's ref is the proof of payment and its
 * amount is what the claim took. Without it the request was not executed (wrong nonce, expired,
 * reverted, dropped) or its call failed: it is signed and sent again, a few times.
 */
function claimTxOutcome(ctx: Ctx) {
  const rewardsAbi = artifact('MintworksRewards').abi;
  const forwarderAbi = artifact('MintworksForwarder').abi;
  const client = ctx.sender!.client;
  return async (row: ChainTxRow, outcome: TxOutcome): Promise<void> => {
    const p = JSON.parse(row.payload) as ClaimPayload;
    const receipt = await receiptOf(ctx, row, outcome);
    let claimedOnChain: bigint | null = null;
    let executed: boolean | null = null;
    if (receipt?.status === 'success') {
      executed = forwardResults(receipt, p.forwarder as Address).get(`${p.user_address}:${p.nonce}`) ?? null;
      for (const log of parseEventLogs({ abi: rewardsAbi, logs: receipt.logs, eventName: 'Claimed' })) {
        const a = log.args as { amount: bigint; ref: Hex };
        if (log.address.toLowerCase() === p.contract.toLowerCase() && a.ref.toLowerCase() === p.ref.toLowerCase()) claimedOnChain = a.amount;
      }
    }
    // Facts for a failed attempt are read before the transaction (no RPC while holding the database).
    let poolWithdrawn = false;
    let chainNonce: bigint | null = null;
    if (claimedOnChain === null) {
      poolWithdrawn = (await client.readContract({ address: p.contract as Address, abi: rewardsAbi, functionName: 'withdrawn' })) === true;
      chainNonce = (await client.readContract({ address: p.forwarder as Address, abi: forwarderAbi, functionName: 'nonces', args: [p.user_address as Address] })) as bigint;
    }
    let notify = false;
    await ctx.db.transaction().execute(async (tx) => {
      if (!(await claimOutcome(tx, row.id))) return;
      const c = await tx.selectFrom('claims').selectAll().where('uid', '=', p.claim_uid).executeTakeFirst();
      if (!c) return;
      const step = claimOutcomeStep({ status: c.status, current: c.tx_id === row.id, claimedOnChain, executed, poolWithdrawn, rounds: c.rounds, maxRounds: MAX_CLAIM_ROUNDS });
      if (step.do === 'ignore') return;
      notify = true;
      if (step.do === 'done') return finishClaim(ctx, tx, c, { amount: step.amount, txId: row.id });
      if (step.do === 'fail') return finishClaim(ctx, tx, c, { reason: step.reason });
      // Retry: keep the claim slot (the claims waiting behind it keep waiting), sign again.
      if (step.resyncNonce && chainNonce !== null) await resyncForwarderNonce(tx, p.user_address as Address, chainNonce);
      await tx.updateTable('claims').set({ tx_id: null, updated_at: nowIso() }).where('uid', '=', c.uid).execute();
      await ctx.queue.enqueue(tx, { kind: CLAIM_JOB, ref: c.uid, groupKey: claimGroup(c.reward_uid, c.from_user_uid), runAt: Date.now() + 1000 });
      ctx.log.warn({ claim: c.uid, tx: row.id, executed, reason: outcome.reason }, 'claim not executed on chain, signing it again');
    });
    if (notify) ctx.queue.notify(CLAIM_JOB);
  };
}

// --------------------------------------------------------------------------------- withdraw job

export function withdrawJobHandler(ctx: Ctx): JobHandler {
  const sender = ctx.sender!;
  const { abi } = artifact('MintworksRewards');
  return {
    kind: WITHDRAW_JOB,
    batchSize: 10,
    leaseMs: 30_000,
    pollMs: 1000,
    async handle(jobs) {
      for (const job of jobs) {
        const r = await ctx.db.selectFrom('rewards').selectAll().where('uid', '=', job.ref).executeTakeFirst();
        if (!r || r.withdraw_status !== 'requested' || r.withdraw_tx_id !== null) {
          await ctx.queue.complete(ctx.db, job.id);
          continue;
        }
        if (r.status !== 'deployed' || !r.contract_address) {
          await ctx.queue.defer(ctx.db, job.id, 2000);
          continue;
        }
        // What was accepted before the request runs first: its users get what they were promised.
        const busy = await Promise.all([
          ctx.db.selectFrom('allocations').select('uid').where('reward_uid', '=', r.uid).where('status', '=', 'pending').executeTakeFirst(),
          ctx.db.selectFrom('claims').select('uid').where('reward_uid', '=', r.uid).where('status', '=', 'pending').executeTakeFirst(),
        ]);
        if (busy.some(Boolean)) {
          await ctx.queue.defer(ctx.db, job.id, 1000);
          continue;
        }
        const data = encodeFunctionData({ abi, functionName: 'withdraw' });
        const row = await ctx.db.transaction().execute(async (tx) => {
          const rec = await sender.record(tx, { kind: WITHDRAW_TX, ref: r.uid, payload: { reward_uid: r.uid, contract: r.contract_address }, to: r.contract_address as Address, data, gas: 150_000n });
          await tx.updateTable('rewards').set({ withdraw_tx_id: rec.id }).where('uid', '=', r.uid).execute();
          await ctx.queue.complete(tx, job.id);
          return rec;
        });
        await sender.broadcast([row]);
      }
    },
  };
}

function withdrawOutcome(ctx: Ctx) {
  const { abi } = artifact('MintworksRewards');
  const client = ctx.sender!.client;
  return async (row: ChainTxRow, outcome: TxOutcome): Promise<void> => {
    const p = JSON.parse(row.payload) as { reward_uid: string; contract: string };
    const receipt = await receiptOf(ctx, row, outcome);
    let amount: bigint | null = null;
    if (receipt?.status === 'success') {
      for (const log of parseEventLogs({ abi, logs: receipt.logs, eventName: 'Withdrawn' })) {
        if (log.address.toLowerCase() === p.contract.toLowerCase()) amount = (log.args as { amount: bigint }).amount;
      }
    }
    // Withdrawn by an earlier transaction (replayed after a rewind): the pool is closed all the same.
    const closed = amount !== null || (await client.readContract({ address: p.contract as Address, abi, functionName: 'withdrawn' }).catch(() => false)) === true;
    let retry = false;
    await ctx.db.transaction().execute(async (tx) => {
      if (!(await claimOutcome(tx, row.id))) return;
      const r = await lockReward(ctx, tx, p.reward_uid, 'update');
      if (!r || r.withdraw_status === 'done') return;
      if (closed) {
        const done: RewardRow = { ...r, withdraw_status: 'done', withdrawn_amount: amount === null ? null : unitsToDb(amount), withdrawn_at: nowIso() };
        await tx.updateTable('rewards').set({ withdraw_status: 'done', withdrawn_amount: done.withdrawn_amount, withdrawn_at: done.withdrawn_at }).where('uid', '=', r.uid).execute();
        await emitEvent(tx, r.app_uid, 'reward.withdrawn', { reward: rewardView(done, ctx.config) });
        ctx.log.info({ reward: r.uid, amount: amount?.toString() }, 'reward withdrawn');
      } else if (r.withdraw_tx_id === row.id) {
        // Only an operator can withdraw and every relayer is one: a failure is transient (gas, a
        // dropped transaction). Keep trying.
        await tx.updateTable('rewards').set({ withdraw_tx_id: null }).where('uid', '=', r.uid).execute();
        await ctx.queue.enqueue(tx, { kind: WITHDRAW_JOB, ref: r.uid, runAt: Date.now() + 5000 });
        retry = true;
      }
    });
    if (retry) ctx.log.error({ reward: p.reward_uid, reason: outcome.reason }, 'withdrawal not confirmed on chain, trying again');
  };
}

// ===================================================================================== composition

/** The reward job handlers, for WorkerPool.start (src/service.ts). */
export function rewardJobHandlers(ctx: Ctx): JobHandler[] {
  return [rewardDeployJobHandler(ctx), allocationJobHandler(ctx), claimJobHandler(ctx), withdrawJobHandler(ctx)];
}

/** Registers the outcome effects of the reward chain transactions on the sender (src/service.ts). */
export function registerRewardOutcomes(ctx: Ctx): void {
  const sender = ctx.sender!;
  sender.onOutcome(DEPLOY_TX, rewardDeployOutcome(ctx));
  sender.onOutcome(ALLOCATE_TX, allocationOutcome(ctx));
  sender.onOutcome(CLAIM_TX, claimTxOutcome(ctx));
  sender.onOutcome(WITHDRAW_TX, withdrawOutcome(ctx));
}

