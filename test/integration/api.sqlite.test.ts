import { apiSuite } from './api-suite.js';

apiSuite('sqlite');
