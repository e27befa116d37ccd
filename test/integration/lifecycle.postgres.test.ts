import { lifecycleSuite } from './lifecycle-suite.js';

lifecycleSuite('postgres');
