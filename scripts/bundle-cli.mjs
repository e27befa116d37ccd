#!/usr/bin/env node
// The CLI as one file (dist/cli/mintworks.js, after tsc): the compiled tree and its packages are about
// 1,600 modules, and Node opening, resolving and linking them cost ~0.8 s of CPU on every start, more than
// most commands' own work (the test suite starts the CLI hundreds of times; an operator's script too).
// One file starts in about a quarter of that. bin/mintworks.js runs it when it is current.
//
// The bundle sits in dist/cli/, where dist/cli/main.js is: paths the code builds from import.meta.url
// (package.json, build/contracts) are two levels up from both. Packages with native parts or files they
// read beside themselves at run time stay outside and load from node_modules as before.
import { build } from 'esbuild';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
await build({
  entryPoints: [join(root, 'dist/cli/main.js')],
  outfile: join(root, 'dist/cli/mintworks.js'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Native addons, optional natives, and pino (its transports start worker threads from their own files).
  external: ['better-sqlite3', 'pkcs11js', 'keccak', 'pg-native', 'pino', 'pino/*', 'pino-pretty', 'thread-stream'],
  // CommonJS packages inside an ES module bundle still call require() for Node's own modules.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  logLevel: 'warning',
});
