// Where the build's outputs are, from this module's own place. The code runs as the compiled tree
// (dist/util/…), as a bundle (the service's in dist/bundle/, the CLI's in dist/cli/) or, under tsx, as
// the sources (src/util/…): each two levels under the checkout, so the root is two levels up from all.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');

/** What `npm run build` produces beside dist/: the compiled contracts and the console. */
export const BUILD_DIR = path.join(root, 'build');

/** Whether this code runs from the service bundle (scripts/bundle-service.mjs). */
const inServiceBundle = path.basename(here) === 'bundle';

/** Whether this code runs from the TypeScript sources (tsx: the tests). */
export const fromSources = import.meta.url.endsWith('.ts');

type ThreadName = 'main-workers-thread' | 'main-creates-thread';

/** A thread's entry module: beside this code in the bundle, else in dist/ (or src/ for the sources). */
function threadEntry(name: ThreadName): URL {
  if (fromSources) return pathToFileURL(path.join(root, 'src', `${name}.ts`));
  return pathToFileURL(path.join(root, 'dist', inServiceBundle ? 'bundle' : '', `${name}.js`));
}

/**
 * What `new Worker` is given for a thread: its entry module; from the sources, code that registers tsx
 * first and then imports it (a thread does not inherit the loader its process was started with).
 */
export function threadStart(name: ThreadName): [string | URL, { eval?: boolean }] {
  const entry = threadEntry(name);
  if (!fromSources) return [entry, {}];
  return [`import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`, { eval: true }];
}
