// The lifecycle suite (mint, edit, transfer, burn, deposits, re-reading the chain as after a reorg)
// against Hardhat's node mining a block every 2 s, instead of the embedded anvil mining on arrival:
// nothing may depend on one node's quirks.
import { lifecycleSuite } from './lifecycle-suite.js';
import { hardhatChain } from '../helpers/suite-chain.js';

lifecycleSuite('sqlite', hardhatChain(2));
