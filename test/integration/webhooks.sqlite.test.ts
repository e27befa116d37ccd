// Webhooks end to end on SQLite ; webhooks.postgres.test.ts runs it on PostgreSQL.
import { webhookSuite } from './webhooks-suite.js';

webhookSuite('sqlite');
