// Every route's parameters through the kit's text checks, on PostgreSQL.
import { textWalkSuite } from './text-walk-suite.js';

textWalkSuite('postgres');
