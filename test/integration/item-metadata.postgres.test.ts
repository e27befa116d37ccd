import { itemMetadataSuite } from './item-metadata-suite.js';

itemMetadataSuite('postgres');
