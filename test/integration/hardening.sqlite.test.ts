import { hardeningSuite } from './hardening-suite.js';

hardeningSuite('sqlite');
