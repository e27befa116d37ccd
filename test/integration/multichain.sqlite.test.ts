import { multichainSuite } from './multichain-suite.js';

multichainSuite('sqlite');
