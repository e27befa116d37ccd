import { collectionOptionsSuite } from './collection-options-suite.js';

collectionOptionsSuite('sqlite');
