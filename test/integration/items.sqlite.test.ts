import { itemsSuite } from './items-suite.js';

itemsSuite('sqlite');
