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
import type { Ctx } from '../context.js';
import type { JobHandler } from '../../jobs/worker.js';
import { ALLOCATE_TX, CLAIM_TX, DEPLOY_TX, WITHDRAW_TX } from './shared.js';
import { rewardDeployJobHandler, rewardDeployOutcome } from './deploy.js';
import { allocationJobHandler, allocationOutcome } from './allocations.js';
import { claimJobHandler, claimTxOutcome } from './claims.js';
import { withdrawJobHandler, withdrawOutcome } from './withdraw.js';

export * from './requests.js';

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
