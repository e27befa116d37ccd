// Withdrawal of what a reward still holds to its withdraw_receiver, after what was accepted before it.
import { encodeFunctionData, parseEventLogs, type Address } from 'viem';
import type { ChainCtx } from '../context.js';
import type { JobHandler } from '../../jobs/worker.js';
import { WITHDRAW_JOB } from '../../jobs/kinds.js';
import { artifact } from '../../chain/artifacts.js';
import { WITHDRAW_TX, type OutcomeHandler } from '../../chain/outcomes.js';
import { nowIso } from '../../util/time.js';
import { unitsToDb } from '../../domain/amounts.js';
import { emitEvent } from '../events.js';
import { rewardView, type RewardRow } from './views.js';
import { lockReward } from './shared.js';

// --------------------------------------------------------------------------------- withdraw job

export function withdrawJobHandler(ctx: ChainCtx): JobHandler<typeof WITHDRAW_JOB> {
  const sender = ctx.sender;
  const { abi } = artifact('MintworksRewards');
  return {
    kind: WITHDRAW_JOB,
    batchSize: 10,
    leaseMs: 30_000,
    pollMs: 1000,
    async handle(jobs) {
      for (const job of jobs) {
        const r = await ctx.db.selectFrom('rewards').selectAll().where('uid', '=', job.ref).executeTakeFirst();
        if (r?.withdraw_status !== 'requested' || r.withdraw_tx_id !== null) {
          await ctx.queue.complete(ctx.db, job.id);
          continue;
        }
        if (r.status !== 'deployed' || !r.contract_address) {
          await ctx.queue.defer(ctx.db, job, 2000);
          continue;
        }
        // What was accepted before the request runs first: its users get what they were promised.
        const busy = await Promise.all([
          ctx.db.selectFrom('allocations').select('uid').where('reward_uid', '=', r.uid).where('status', '=', 'pending').executeTakeFirst(),
          ctx.db.selectFrom('claims').select('uid').where('reward_uid', '=', r.uid).where('status', '=', 'pending').executeTakeFirst(),
        ]);
        if (busy.some(Boolean)) {
          await ctx.queue.defer(ctx.db, job, 1000);
          continue;
        }
        const data = encodeFunctionData({ abi, functionName: 'withdraw' });
        const contract = r.contract_address;
        const row = await ctx.db.transaction().execute(async (tx) => {
          const rec = await sender.record(tx, {
            kind: WITHDRAW_TX,
            ref: r.uid,
            payload: { reward_uid: r.uid, contract },
            to: contract as Address,
            data,
            gas: 150_000n,
          });
          await tx.updateTable('rewards').set({ withdraw_tx_id: rec.id }).where('uid', '=', r.uid).execute();
          await ctx.queue.complete(tx, job.id);
          return rec;
        });
        await sender.broadcast([row]);
      }
    },
  };
}

export function withdrawOutcome(ctx: ChainCtx): OutcomeHandler<typeof WITHDRAW_TX> {
  const { abi } = artifact('MintworksRewards');
  const client = ctx.sender.client;
  return async ({ row, payload: p, receipt, reason }) => {
    let amount: bigint | null = null;
    if (receipt?.status === 'success') {
      for (const log of parseEventLogs({ abi, logs: receipt.logs, eventName: 'Withdrawn' })) {
        if (log.address.toLowerCase() === p.contract.toLowerCase()) amount = (log.args as { amount: bigint }).amount;
      }
    }
    // Withdrawn by an earlier transaction (replayed after a rewind): the pool is closed all the same.
    const closed =
      amount !== null || (await client.readContract({ address: p.contract as Address, abi, functionName: 'withdrawn' }).catch(() => false)) === true;
    return async (tx) => {
      const r = await lockReward(ctx, tx, p.reward_uid, 'update');
      if (!r || r.withdraw_status === 'done') return;
      if (closed) {
        const done: RewardRow = { ...r, withdraw_status: 'done', withdrawn_amount: amount === null ? null : unitsToDb(amount), withdrawn_at: nowIso() };
        await tx
          .updateTable('rewards')
          .set({ withdraw_status: 'done', withdrawn_amount: done.withdrawn_amount, withdrawn_at: done.withdrawn_at })
          .where('uid', '=', r.uid)
          .execute();
        await emitEvent(tx, r.app_uid, 'reward.withdrawn', { reward: rewardView(done, ctx.installation) });
        ctx.log.info({ reward: r.uid, amount: amount?.toString() }, 'reward withdrawn');
      } else if (r.withdraw_tx_id === row.id) {
        // Only an operator can withdraw and every relayer is one: a failure is transient (gas, a
        // dropped transaction). Keep trying.
        await tx.updateTable('rewards').set({ withdraw_tx_id: null }).where('uid', '=', r.uid).execute();
        await ctx.queue.enqueue(tx, { kind: WITHDRAW_JOB, ref: r.uid, runAt: Date.now() + 5000 });
        return () => ctx.log.error({ reward: p.reward_uid, reason }, 'withdrawal not confirmed on chain, trying again');
      }
    };
  };
}
