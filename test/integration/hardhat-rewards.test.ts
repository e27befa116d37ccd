// The rewards suite (allocations, claims, withdrawals, refusals) against Hardhat's node mining a block
// every 2 s, instead of the embedded anvil mining on arrival: nothing may depend on one node's quirks.
import { rewardsSuite } from './rewards-suite.js';
import { hardhatChain } from '../helpers/suite-chain.js';

rewardsSuite('sqlite', hardhatChain(2));
