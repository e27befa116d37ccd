// Webhooks end to end on PostgreSQL (issue 6 acceptance).
import { webhookSuite } from './webhooks-suite.js';

webhookSuite('postgres');
