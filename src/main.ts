// `npm start`: the service (main-service.ts), run from its bundle when that is current. The compiled
// tree and its packages are about 1,400 modules, loaded once per thread (the API's, the creates' and
// the workers'); every module's source, record and namespace cost the API's and the workers' threads
// about 10 MB of heap apiece, and Node opening, resolving and linking them most of a start. The bundle
// (dist/bundle/, built by `npm run build`: scripts/bundle-service.mjs) is a few minified files. A build
// with tsc alone leaves the bundle behind it: then the tree runs, as under tsx (the sources).
// MINTWORKS_FROM_TREE=1 runs the tree all the same: a CPU profile then names the files and packages
// (bench/profile.ts sets it).
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';

// V8's allocation-site pretenuring is off. V8 switches an allocation site (a literal in the code) to
// allocating in the old generation once most of its objects outlive a scavenge, and after a start some
// sites a request also uses were switched: under load every scavenge of the API thread then promoted
// the objects Node and Fastify make for each request (0.6-0.7 MB every 10-15 ms, scavenges of 2-3 ms
// instead of 0.5, a full collection every quarter of a second), a quarter to a third of a cached GET's
// CPU on SQLite. Without it a request's objects die young, as in a bare Fastify process (bench/README.md,
// "Requests that died old"). Set before the service's modules load; V8's flags are process-wide, so
// the creates' and workers' threads run without it too.
setFlagsFromString('--no-allocation-site-pretenuring');

const self = fileURLToPath(import.meta.url);
const bundle = new URL('./bundle/main-service.js', import.meta.url);
const bundled = process.env.MINTWORKS_FROM_TREE !== '1' && !self.endsWith('.ts') && existsSync(bundle) && statSync(bundle).mtimeMs >= statSync(self).mtimeMs;
await import(bundled ? bundle.href : './main-service.js');
