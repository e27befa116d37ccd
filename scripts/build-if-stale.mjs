#!/usr/bin/env node
// `npm start` runs this first: it rebuilds only when the build (dist/, build/) is older than its
// sources, so a start after a build costs a few milliseconds, and it needs nothing but Node when the
// build is current, so `npm start` works after `npm prune --omit=dev`.
//
//   node scripts/build-if-stale.mjs           rebuild (npm run build) if stale, else nothing
//   node scripts/build-if-stale.mjs --check   exit 1 if stale, 0 if current
//   node scripts/build-if-stale.mjs --write   record the current sources as built (the last step of npm run build)
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const stampFile = join(root, 'dist', '.build-hash');
// What the build reads. package-lock.json: the versions of tsc, solc, Vite and the console's packages.
const INPUTS = [
  'src',
  'console',
  'contracts',
  'scripts/build-contracts.mjs',
  'scripts/build-console.mjs',
  'scripts/bundle-cli.mjs',
  'scripts/bundle-service.mjs',
  'tsconfig.json',
  'package-lock.json',
];
// What the service needs at run time from the build.
const OUTPUTS = ['dist/main.js', 'dist/bundle/main-service.js', 'dist/cli/main.js', 'dist/cli/mintworks.js', 'build/contracts', 'build/console/index.html'];

function files(p) {
  if (!existsSync(p)) return [];
  if (!statSync(p).isDirectory()) return [p];
  return readdirSync(p)
    .sort()
    .flatMap((name) => (name === 'node_modules' || name === 'dist' ? [] : files(join(p, name))));
}

export function sourceHash() {
  const h = createHash('sha256');
  for (const f of INPUTS.flatMap((i) => files(join(root, i)))) h.update(relative(root, f)).update('\0').update(readFileSync(f)).update('\0');
  return h.digest('hex');
}

const current = () => OUTPUTS.every((o) => existsSync(join(root, o))) && existsSync(stampFile) && readFileSync(stampFile, 'utf8').trim() === sourceHash();

const mode = process.argv[2];
if (mode === '--write') {
  writeFileSync(stampFile, sourceHash() + '\n');
} else if (mode === '--check') {
  process.exit(current() ? 0 : 1);
} else if (!current()) {
  // What the build needs beyond Node: the compiler, Node's types and the bundlers of the console and the CLI (dev dependencies).
  const missing = ['typescript', '@types/node', 'vite', 'esbuild'].filter((p) => {
    try {
      createRequire(import.meta.url).resolve(`${p}/package.json`);
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length) {
    process.stderr.write(
      `The build (dist/, build/) is missing or older than the sources, and the build tools are not installed (${missing.join(', ')})\n` +
        '(npm prune --omit=dev or npm ci --omit=dev?). Build where the dev dependencies are: npm ci && npm run build,\n' +
        'then prune; or run npm ci here.\n',
    );
    process.exit(1);
  }
  process.stderr.write('The build is older than the sources: npm run build\n');
  const r = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
