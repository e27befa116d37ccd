// The chain suites (mint, edit, transfer, burn, deposits, re-reading the chain as after a reorg;
// rewards: allocations, claims, withdrawals, refusals) against Hardhat's node mining a block every 2 s,
// instead of the embedded anvil mining on arrival: nothing may depend on one node's quirks.
import { lifecycleSuite } from './lifecycle-suite.js';
import { rewardsSuite } from './rewards-suite.js';
import { hardhatChain } from '../helpers/suite-chain.js';

lifecycleSuite('sqlite', hardhatChain(2));
rewardsSuite('sqlite', hardhatChain(2));
