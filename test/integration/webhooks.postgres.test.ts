// Webhooks end to end on PostgreSQL.
import { webhookSuite } from './webhooks-suite.js';

webhookSuite('postgres');
