// Every kind of chain transaction with the handler that applies its outcome, in one table: the type
// (OutcomeHandlers, src/chain/outcomes.ts) requires a handler for each kind declared there, so a kind
// added without one does not compile. Built per chain once its forwarder is known (the relayed kinds
// need it).
import type { ChainCtx } from '../context.js';
import { forwarderDeployed, type OutcomeHandlers } from '../../chain/outcomes.js';
import { deployOutcome } from '../collections/collections.js';
import { mintOutcome } from '../assets/mint-outcome.js';
import { forwardOutcome } from '../assets/lifecycle/relay.js';
import { editOutcome } from '../assets/lifecycle/edit.js';
import { rewardDeployOutcome } from '../rewards/deploy-job.js';
import { allocationOutcome } from '../rewards/allocations-job.js';
import { claimTxOutcome } from '../rewards/claims-job.js';
import { withdrawOutcome } from '../rewards/withdraw-job.js';
import { baseUriOutcome } from '../collections/base-uri.js';
import { collectionInfoOutcome } from '../collections/info.js';
import { rotationOutcome } from './relayer-rotation-job.js';
import { itemMintOutcome } from '../items/mint-job.js';
import { itemForwardOutcome } from '../items/relay.js';
import { itemUriOutcome } from '../items/uri-job.js';
import type { AppliedMints } from '../../chain/applied-mints.js';

/** `appliedMints`: told of each mint transaction whose outcome marked its tokens (see src/chain/applied-mints.ts). */
export function outcomeHandlers(ctx: ChainCtx, appliedMints: AppliedMints): OutcomeHandlers {
  return {
    'forwarder.deploy': forwarderDeployed,
    'collection.deploy': deployOutcome(ctx),
    'asset.mint': mintOutcome(ctx, appliedMints),
    forward: forwardOutcome(ctx),
    'asset.edit': editOutcome(ctx),
    'reward.deploy': rewardDeployOutcome(ctx),
    'reward.allocate': allocationOutcome(ctx),
    'reward.claim': claimTxOutcome(ctx),
    'reward.withdraw': withdrawOutcome(ctx),
    'collection.base_uri': baseUriOutcome(ctx),
    'collection.info': collectionInfoOutcome(ctx),
    'relayers.rotation': rotationOutcome(ctx),
    'item.mint': itemMintOutcome(ctx),
    'item.forward': itemForwardOutcome(ctx),
    'item.uri': itemUriOutcome(ctx),
  };
}
