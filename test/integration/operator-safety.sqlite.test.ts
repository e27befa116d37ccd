// Operator safety (audit chain, every act audited, the operator-token lockout) on SQLite.
import { operatorSafetySuite } from './operator-safety-suite.js';

operatorSafetySuite('sqlite');
