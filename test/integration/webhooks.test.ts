// Webhooks end to end on SQLite (issue 6 acceptance); webhooks.postgres.test.ts runs it on PostgreSQL.
import { webhookSuite } from './webhooks-suite.js';

webhookSuite('sqlite');
