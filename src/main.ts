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

const self = fileURLToPath(import.meta.url);
const bundle = new URL('./bundle/main-service.js', import.meta.url);
const bundled = process.env.MINTWORKS_FROM_TREE !== '1' && !self.endsWith('.ts') && existsSync(bundle) && statSync(bundle).mtimeMs >= statSync(self).mtimeMs;
await import(bundled ? bundle.href : './main-service.js');
