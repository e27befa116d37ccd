// Every route's parameters through the kit's text checks, on SQLite.
import { textWalkSuite } from './text-walk-suite.js';

textWalkSuite('sqlite');
