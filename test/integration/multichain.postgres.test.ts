import { multichainSuite } from './multichain-suite.js';

multichainSuite('postgres');
