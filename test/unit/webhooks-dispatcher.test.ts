// The webhook dispatcher on SQLite (the suite also runs on PostgreSQL in test/integration).
import { dispatcherSuite } from './webhooks-dispatcher.suite.js';

dispatcherSuite('sqlite');
