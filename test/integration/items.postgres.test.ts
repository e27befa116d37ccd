import { itemsSuite } from './items-suite.js';

itemsSuite('postgres');
