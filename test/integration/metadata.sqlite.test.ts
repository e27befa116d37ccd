// Asset images and metadata end to end on SQLite, including the SSRF refusals (see metadata-suite.ts).
import { metadataSuite } from './metadata-suite.js';

metadataSuite('sqlite', { strict: true });
