// Asset images and metadata end to end on PostgreSQL (the SSRF refusals do not depend on the database
// and run in metadata.sqlite.test.ts).
import { metadataSuite } from './metadata-suite.js';

metadataSuite('postgres', { strict: false });
