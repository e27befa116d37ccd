// Deployment of a reward's MintworksRewards contract, as a job, and its outcome.
import { encodeDeployData, getAddress, type Address } from 'viem';
import type { Ctx } from '../context.js';
import type { JobHandler } from '../../jobs/worker.js';
import { artifact } from '../../chain/artifacts.js';
import { claimOutcome, type ChainTxRow, type TxOutcome } from '../../chain/sender.js';
import { unitsFromDb } from '../../domain/amounts.js';
import { REWARD_DEPLOY_JOB, ALLOCATE_JOB, DEPLOY_TX } from './shared.js';

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

export function rewardDeployOutcome(ctx: Ctx) {
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
