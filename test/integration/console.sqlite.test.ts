// The console's API on SQLite; console.postgres.test.ts runs it on PostgreSQL.
import { consoleSuite } from './console-suite.js';

consoleSuite('sqlite');
