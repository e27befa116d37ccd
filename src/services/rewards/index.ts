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
import type { ChainCtx } from '../context.js';
import { rewardDeployJobHandler } from './deploy-job.js';
import { allocationJobHandler } from './allocations-job.js';
import { claimJobHandler } from './claims-job.js';
import { withdrawJobHandler } from './withdraw-job.js';

export * from './requests.js';

// ===================================================================================== composition

/** The reward job handlers, for a chain's worker pool (services/chain/work.ts); their outcomes are in outcome-handlers.ts. */
export function rewardJobHandlers(ctx: ChainCtx) {
  return { deploy: rewardDeployJobHandler(ctx), allocate: allocationJobHandler(ctx), claim: claimJobHandler(ctx), withdraw: withdrawJobHandler(ctx) };
}
