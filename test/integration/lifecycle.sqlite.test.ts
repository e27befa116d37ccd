import { lifecycleSuite } from './lifecycle-suite.js';

lifecycleSuite('sqlite');
