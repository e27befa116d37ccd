// Allocations on chain: queued allocations of a reward go out together in one allocateBatch.
import { encodeFunctionData, getAddress, parseEventLogs, type Address, type Hex } from 'viem';
import type { ChainCtx, Ctx } from '../context.js';
import type { Job } from '../../jobs/queue.js';
import type { JobHandler } from '../../jobs/worker.js';
import { ALLOCATE_JOB, CLAIM_JOB } from '../../jobs/kinds.js';
import type { Tx } from '../../store/db.js';
import { artifact } from '../../chain/artifacts.js';
import { ALLOCATE_TX, type AllocationItem, type OutcomeHandler, type OutcomePayloads } from '../../chain/outcomes.js';
import { nowIso } from '../../util/time.js';
import { unitsFromDb, unitsToDb } from '../../domain/amounts.js';
import { allocationFailureReason, allocationOutcomeStep, chainRef } from '../../domain/rewards.js';
import { emitEvent } from '../events.js';
import { allocationView, type AllocationRow, type RewardRow } from './views.js';
import { deferUntilDeployed } from '../collections/contract-deploy.js';
import { MAX_ALLOCATION_ROUNDS, lockReward, lockLedger, writeLedger, claimGroup } from './shared.js';

// ------------------------------------------------------------------------------- allocation job

/** Gas for allocateBatch: ~50k per new allocation measured; generous so a batch never runs short. */
export const allocationGas = (n: number): bigint => BigInt(80_000 + 80_000 * n);

/**
 * Writes pending allocations on chain, many per transaction (allocateBatch) when many are queued for
 * one reward. Allocations of a reward still deploying wait for the deployment, which wakes them.
 * Long: a batch is read, grouped by reward and sent in one pass that shares its groups.
 */
export function allocationJobHandler(ctx: ChainCtx): JobHandler<typeof ALLOCATE_JOB> {
  const sender = ctx.sender;
  const { abi } = artifact('MintworksRewards');
  return {
    kind: ALLOCATE_JOB,
    batchSize: Math.min(ctx.config.mintBatchSize, 100),
    leaseMs: 10_000,
    pollMs: 500,
    async handle(jobs) {
      const rows = await allocationsOf(
        ctx,
        jobs.map((j) => j.ref),
      );
      const byUid = new Map(rows.map((r) => [r.uid, r]));
      const groups: { rewardUid: string; contract: string; jobs: Job<typeof ALLOCATE_JOB>[]; items: AllocationItem[] }[] = [];
      const shared = new Map<string, (typeof groups)[number]>();
      const undeployed: { job: Job<typeof ALLOCATE_JOB>; rewardUid: string }[] = [];
      for (const job of jobs) {
        const a = byUid.get(job.ref);
        if (a?.status !== 'pending' || a.tx_id !== null) {
          await ctx.queue.complete(ctx.db, job.id); // done, failed, gone, or already in a transaction
          continue;
        }
        if (a.reward_status !== 'deployed' || !a.contract_address) {
          undeployed.push({ job, rewardUid: a.reward_uid });
          continue;
        }
        const item: AllocationItem = { uid: a.uid, to: a.to_address, amount: a.amount, ref: chainRef('allocation', a.uid) };
        // A retry after a failed batch goes alone, so a bad allocation cannot sink the others again.
        if (job.payload.solo) {
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
      await waitForDeployment(ctx, undeployed);
      for (const g of groups) {
        const data = encodeFunctionData({
          abi,
          functionName: 'allocateBatch',
          args: [g.items.map((i) => getAddress(i.to)), g.items.map((i) => BigInt(i.amount)), g.items.map((i) => i.ref)],
        });
        const rounds = Object.fromEntries(g.jobs.map((j) => [j.ref, j.payload.round ?? 1]));
        const payload: OutcomePayloads[typeof ALLOCATE_TX] = { reward_uid: g.rewardUid, contract: g.contract, items: g.items, rounds };
        const row = await ctx.db.transaction().execute(async (tx) => {
          const rec = await sender.record(tx, {
            kind: ALLOCATE_TX,
            ref: g.rewardUid,
            payload,
            to: g.contract as Address,
            data,
            gas: allocationGas(g.items.length),
          });
          await tx
            .updateTable('allocations')
            .set({ tx_id: rec.id, updated_at: nowIso() })
            .where(
              'uid',
              'in',
              g.items.map((i) => i.uid),
            )
            .execute();
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
        if (a?.status !== 'pending' || a.tx_id !== null) return;
        const reward = (await lockReward(ctx, tx, a.reward_uid, 'update'))!;
        await failAllocation(ctx, tx, reward, a, `not sent to the chain: ${error}`);
      });
      ctx.queue.notify(CLAIM_JOB);
    },
  };
}

/**
 * Allocations whose reward was read still deploying: deferred until the deployment's outcome wakes
 * them (deploy-job.ts), or due at once when it committed since they were read.
 */
export function waitForDeployment(ctx: ChainCtx, undeployed: { job: Job<typeof ALLOCATE_JOB>; rewardUid: string }[]): Promise<void> {
  return deferUntilDeployed(
    ctx,
    { table: 'rewards', jobKind: ALLOCATE_JOB, lock: 'rewardDeployed' },
    undeployed.map((u) => ({ job: u.job, uid: u.rewardUid })),
  );
}

/**
 * Applies an allocation transaction. An allocation is done when the chain shows it: its Allocated
 * event in this receipt, or else `usedRef(ref)` (mined by an earlier transaction, or re-mined after a
 * rewind). Otherwise it is sent again (alone), and after MAX_ALLOCATION_ROUNDS it fails with the
 * contract's reason, giving its amount back to the budget.
 * Long: each outcome of a batch transaction (allocated, used, sent again, failed) is decided from one receipt.
 */
export function allocationOutcome(ctx: ChainCtx): OutcomeHandler<typeof ALLOCATE_TX> {
  const { abi } = artifact('MintworksRewards');
  const client = ctx.sender.client;
  return async ({ row, payload: p, receipt, reason }) => {
    const contract = p.contract as Address;
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
          .simulateContract({
            address: contract,
            abi,
            functionName: 'allocate',
            args: [getAddress(item.to), BigInt(item.amount), item.ref],
            account: ctx.sender.relayers[0].address,
          })
          .then(() => null)
          .catch((err: unknown) => revertName(err));
        reasons.set(item.uid, allocationFailureReason(errorName));
      }
    }
    return async (tx) => {
      const wake: string[] = [];
      let retried = false;
      // Lock order reward -> ledger, as in allocate(): a refund needs the reward row.
      const reward = await lockReward(ctx, tx, p.reward_uid, 'update');
      if (!reward) return;
      const allocs = await tx
        .selectFrom('allocations')
        .selectAll()
        .where(
          'uid',
          'in',
          p.items.map((i) => i.uid),
        )
        .execute();
      for (const a of allocs) {
        const step = allocationOutcomeStep({
          status: a.status,
          onChain: onChain.get(a.uid) ?? false,
          rounds: p.rounds[a.uid] ?? 1,
          maxRounds: MAX_ALLOCATION_ROUNDS,
          batched: p.items.length > 1,
        });
        if (step.do === 'ignore') continue;
        if (step.do !== 'done' && a.tx_id !== row.id) continue; // a newer transaction carries it now
        const t = nowIso();
        if (step.do === 'done') {
          const ledger = (await lockLedger(ctx, tx, a.reward_uid, a.to_user_uid, true))!;
          await tx.updateTable('allocations').set({ status: 'done', tx_id: row.id, error: null, updated_at: t }).where('uid', '=', a.uid).execute();
          ledger.allocatedDone += unitsFromDb(a.amount);
          await writeLedger(tx, a.reward_uid, a.to_user_uid, ledger);
          await emitEvent(tx, a.app_uid, 'reward.allocated', {
            allocation: allocationView({ ...a, status: 'done', tx_id: row.id, error: null, updated_at: t }),
          });
          wake.push(claimGroup(a.reward_uid, a.to_user_uid));
        } else if (step.do === 'retry') {
          await tx.updateTable('allocations').set({ tx_id: null, updated_at: t }).where('uid', '=', a.uid).execute();
          await ctx.queue.enqueue(tx, {
            kind: ALLOCATE_JOB,
            ref: a.uid,
            groupKey: a.reward_uid,
            payload: { round: (p.rounds[a.uid] ?? 1) + 1, solo: step.solo },
          });
          retried = true;
        } else {
          await failAllocation(ctx, tx, reward, a, reasons.get(a.uid) ?? allocationFailureReason(null));
          wake.push(claimGroup(a.reward_uid, a.to_user_uid));
        }
      }
      for (const g of new Set(wake)) await ctx.queue.wakeGroup(tx, CLAIM_JOB, g); // claims waiting for these
      return () => {
        if (retried) {
          ctx.log.warn({ tx: row.id, reward: p.reward_uid, reason: reason ?? 'not on chain' }, 'allocation not confirmed on chain, sending again');
          ctx.queue.notify(ALLOCATE_JOB);
        }
        if (wake.length) ctx.queue.notify(CLAIM_JOB);
      };
    };
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

/** The allocations of a batch of jobs, with what their reward says of the contract. */
function allocationsOf(ctx: ChainCtx, uids: string[]) {
  return ctx.db
    .selectFrom('allocations')
    .innerJoin('rewards', 'rewards.uid', 'allocations.reward_uid')
    .select([
      'allocations.uid',
      'allocations.status',
      'allocations.tx_id',
      'allocations.to_address',
      'allocations.amount',
      'allocations.reward_uid',
      'rewards.status as reward_status',
      'rewards.contract_address',
    ])
    .where('allocations.uid', 'in', uids)
    .execute();
}
