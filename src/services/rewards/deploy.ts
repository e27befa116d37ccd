// Deployment of a reward's MintworksRewards contract, as a job, and its outcome.
import { encodeDeployData, getAddress } from 'viem';
import type { Ctx } from '../context.js';
import type { JobHandler } from '../../jobs/worker.js';
import { artifact } from '../../chain/artifacts.js';
import type { ChainTxRow, TxOutcome } from '../../chain/sender.js';
import { contractDeployJob, contractDeployOutcome } from '../contract-deploy.js';
import { unitsFromDb } from '../../domain/amounts.js';
import { REWARD_DEPLOY_JOB, ALLOCATE_JOB, DEPLOY_TX } from './shared.js';

export function rewardDeployJobHandler(ctx: Ctx): JobHandler {
  const { abi, bytecode } = artifact('MintworksRewards');
  return contractDeployJob(ctx, {
    jobKind: REWARD_DEPLOY_JOB,
    txKind: DEPLOY_TX,
    load: (uid) => ctx.db.selectFrom('rewards').selectAll().where('uid', '=', uid).executeTakeFirst(),
    // Every relayer is an operator: allocations and withdrawals go out from whichever is next.
    deployData: (r) =>
      encodeDeployData({
        abi,
        bytecode,
        args: [r.token_name, r.token_symbol, unitsFromDb(r.supply), getAddress(r.withdraw_receiver), ctx.forwarder!, ctx.sender!.relayers.map((x) => x.address)],
      }),
    payload: (r) => ({ reward_uid: r.uid }),
  });
}

export function rewardDeployOutcome(ctx: Ctx) {
  const apply = contractDeployOutcome(ctx, {
    jobKind: REWARD_DEPLOY_JOB,
    table: 'rewards',
    onDeployed: (tx, uid) => ctx.queue.wakeGroup(tx, ALLOCATE_JOB, uid), // allocations accepted while deploying
  });
  return async (row: ChainTxRow, outcome: TxOutcome): Promise<void> => {
    if (await apply(row, outcome)) ctx.queue.notify(ALLOCATE_JOB);
  };
}
