// Deployment of a reward's MintworksRewards contract, as a job, and its outcome.
import { encodeDeployData, getAddress } from 'viem';
import type { ChainCtx } from '../context.js';
import type { Tx } from '../../store/db.js';
import { lockForTransaction } from '../../store/locks.js';
import type { JobHandler } from '../../jobs/worker.js';
import { ALLOCATE_JOB, REWARD_DEPLOY_JOB } from '../../jobs/kinds.js';
import { artifact } from '../../chain/artifacts.js';
import { REWARD_DEPLOY_TX, type OutcomeHandler } from '../../chain/outcomes.js';
import { contractDeployJob, contractDeployOutcome } from '../collections/contract-deploy.js';
import { unitsFromDb } from '../../domain/amounts.js';

/**
 * Allocations accepted while the reward was deploying go out once it is deployed: in the transaction
 * that marks it deployed, they are woken. Not beside a transaction deferring allocations for this
 * deployment (allocations-job.ts): those are either deferred already, and woken here, or read the
 * reward deployed.
 */
export function allocationsWaiting(ctx: ChainCtx) {
  return async (tx: Tx, uid: string) => {
    await lockForTransaction(tx, 'rewardDeployed', 'shared');
    await ctx.queue.wakeGroup(tx, ALLOCATE_JOB, uid);
    return () => ctx.queue.notify(ALLOCATE_JOB);
  };
}

export function rewardDeployJobHandler(ctx: ChainCtx): JobHandler<typeof REWARD_DEPLOY_JOB> {
  const { abi, bytecode } = artifact('MintworksRewards');
  return contractDeployJob(ctx, {
    jobKind: REWARD_DEPLOY_JOB,
    txKind: REWARD_DEPLOY_TX,
    table: 'rewards',
    onDeployed: allocationsWaiting(ctx),
    load: (uid) => ctx.db.selectFrom('rewards').selectAll().where('uid', '=', uid).executeTakeFirst(),
    // Every relayer is an operator: allocations and withdrawals go out from whichever is next.
    deployData: (r) =>
      encodeDeployData({
        abi,
        bytecode,
        args: [
          r.token_name,
          r.token_symbol,
          unitsFromDb(r.supply),
          getAddress(r.withdraw_receiver),
          ctx.forwarder,
          ctx.sender.operators().map((x) => x.address),
        ],
      }),
    payload: (r) => ({ reward_uid: r.uid }),
  });
}

export function rewardDeployOutcome(ctx: ChainCtx): OutcomeHandler<typeof REWARD_DEPLOY_TX> {
  return contractDeployOutcome(ctx, {
    jobKind: REWARD_DEPLOY_JOB,
    table: 'rewards',
    onDeployed: allocationsWaiting(ctx),
  });
}
