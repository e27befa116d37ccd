#!/usr/bin/env node
// The service as a bundle (dist/bundle/, after tsc): its three threads' entries (the API's
// main-service.js, main-workers-thread.js, main-creates-thread.js) and the chunks they share, minified.
// The compiled tree and its packages are about 1,400 modules, and every thread loads its own copy of
// each: the modules' sources and records were the larger part of each thread's heap at idle, and
// opening, resolving and linking them most of a start. dist/main.js runs the bundle when it is current.
//
// Packages with native parts, or files they read beside themselves at run time, stay outside and load
// from node_modules as before. Paths the code builds from its own place are two levels under the
// checkout here as in the tree (src/util/build-paths.ts).
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist/bundle');
rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: ['main-service', 'main-workers-thread', 'main-creates-thread'].map((e) => join(root, `dist/${e}.js`)),
  outdir,
  bundle: true,
  splitting: true,
  chunkNames: 'chunk-[hash]',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Whitespace and syntax only: identifiers stay as written, so stack traces and CPU profiles read as the
  // sources do (the source maps give the lines: node --enable-source-maps). About 10 MB of heap less
  // over the three threads than unminified.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  // Native addons, optional natives, and pino (its transports start worker threads from their own files).
  external: ['better-sqlite3', 'pkcs11js', 'keccak', 'pg-native', 'pino', 'pino/*', 'pino-pretty', 'thread-stream'],
  // CommonJS packages inside an ES module bundle still call require() for Node's own modules.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  logLevel: 'warning',
});
