#!/usr/bin/env node
// Builds the developer console (console/, Preact + TypeScript, bundled by Vite) into build/console,
// which the service serves under /console. Skips the build when its inputs are unchanged (the sources,
// the shared API types and the versions of the build's packages), so `npm start` stays quick.
//
// Usage: node scripts/build-console.mjs [--force]
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'build', 'console');
const hashFile = join(root, 'build', 'console.hash');
const force = process.argv.includes('--force');

function files(dir) {
  return readdirSync(dir)
    .flatMap((name) => {
      const full = join(dir, name);
      return statSync(full).isDirectory() ? files(full) : [full];
    })
    .sort();
}

const inputs = [...files(join(root, 'console')), join(root, 'src', 'services', 'console', 'types.ts')];
const hash = createHash('sha256');
for (const f of inputs) hash.update(relative(root, f)).update('\0').update(readFileSync(f)).update('\0');
for (const pkg of ['vite', 'preact', 'uplot']) hash.update(`${pkg}@${require(`${pkg}/package.json`).version}\0`);
const digest = hash.digest('hex');

const upToDate = () => {
  try {
    return readFileSync(hashFile, 'utf8').trim() === digest && existsSync(join(outDir, 'index.html'));
  } catch {
    return false;
  }
};

if (!force && upToDate()) {
  console.log('console: up to date');
  process.exit(0);
}

const started = Date.now();
const { build } = await import('vite');
await build({ configFile: join(root, 'console', 'vite.config.mjs') });
writeFileSync(hashFile, `${digest}\n`);
const sizes = files(join(outDir, 'assets')).map((f) => `${relative(outDir, f)} ${Math.round(statSync(f).size / 1024)} KiB`);
console.log(`console: built in ${Date.now() - started} ms (${sizes.join(', ')})`);
