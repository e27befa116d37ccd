import { hardeningSuite } from './hardening-suite.js';

hardeningSuite('postgres');
