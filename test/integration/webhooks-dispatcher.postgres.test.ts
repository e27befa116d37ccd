// The webhook dispatcher suite on PostgreSQL (claims with FOR UPDATE SKIP LOCKED); needs the test
// server of test/helpers/env.ts (TEST_PG_URL, default postgres://postgres@127.0.0.1:5432).
import { dispatcherSuite } from '../unit/webhooks-dispatcher.suite.js';

dispatcherSuite('postgres');
