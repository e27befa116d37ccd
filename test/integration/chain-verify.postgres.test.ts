import { chainVerifySuite } from './chain-verify-suite.js';

chainVerifySuite('postgres');
