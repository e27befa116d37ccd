// The console's API on PostgreSQL.
import { consoleSuite } from './console-suite.js';

consoleSuite('postgres');
