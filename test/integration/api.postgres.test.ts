import { apiSuite } from './api-suite.js';

apiSuite('postgres');
