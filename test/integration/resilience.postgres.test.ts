import { resilienceSuite } from './resilience-suite.js';

resilienceSuite('postgres');
