// Operator safety (audit chain, every act audited, the operator-token lockout) on PostgreSQL.
import { operatorSafetySuite } from './operator-safety-suite.js';

operatorSafetySuite('postgres');
