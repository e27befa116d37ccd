#!/usr/bin/env node
// Compiles contracts/*.sol with solc-js into build/contracts/<ContractName>.json
// ({ contractName, abi, bytecode }). Skips work when nothing relevant changed, so running it
// on every `npm start` is effectively free.
//
// Usage: node scripts/build-contracts.mjs [--force]

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const contractsDir = join(root, 'contracts');
const outDir = join(root, 'build', 'contracts');
const hashFile = join(outDir, '.hash');
const force = process.argv.includes('--force');

const settings = {
  evmVersion: 'cancun',
  optimizer: { enabled: true, runs: 200 },
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
};

const sourceFiles = readdirSync(contractsDir)
  .filter((f) => f.endsWith('.sol'))
  .sort();
if (sourceFiles.length === 0) fail(`no .sol files in ${contractsDir}`);

// Source unit names are "contracts/X.sol" so error messages point at real paths.
const sources = Object.fromEntries(sourceFiles.map((f) => [`contracts/${f}`, { content: readFileSync(join(contractsDir, f), 'utf8') }]));

// Loading solc-js (a big emscripten module) is the slow part; the cache check must not need it.
// Its version is therefore taken from its package.json. The OpenZeppelin version is part of the
// key because imported library sources are not hashed individually.
const solcVersion = require('solc/package.json').version;
const ozVersion = require('@openzeppelin/contracts/package.json').version;
const hash = createHash('sha256').update(JSON.stringify({ sources, solcVersion, ozVersion, settings })).digest('hex');

function previousArtifacts() {
  try {
    const prev = JSON.parse(readFileSync(hashFile, 'utf8'));
    return prev.hash === hash && prev.contracts.every((c) => existsSync(join(outDir, `${c}.json`))) ? prev.contracts : null;
  } catch {
    return null;
  }
}

const cached = force ? null : previousArtifacts();
if (cached) {
  console.log(`contracts: up to date (${cached.join(', ')})`);
  process.exit(0);
}

const solc = require('solc');

// Resolves `@openzeppelin/...` (and any other package import) from node_modules.
function findImports(path) {
  try {
    return { contents: readFileSync(require.resolve(path), 'utf8') };
  } catch {
    return { error: `File not found: ${path}` };
  }
}

const started = Date.now();
const output = JSON.parse(solc.compile(JSON.stringify({ language: 'Solidity', sources, settings }), { import: findImports }));

const diagnostics = output.errors ?? [];
for (const d of diagnostics.filter((d) => d.severity !== 'error')) {
  console.warn(d.formattedMessage ?? d.message);
}
const errors = diagnostics.filter((d) => d.severity === 'error');
if (errors.length > 0) {
  for (const e of errors) console.error(e.formattedMessage ?? e.message);
  fail(`compilation failed with ${errors.length} error(s)`);
}

// Only contracts declared in our own files; imported OpenZeppelin units are skipped, and so are
// interfaces/abstract contracts (empty bytecode).
const artifacts = [];
for (const unit of Object.keys(sources)) {
  for (const [contractName, c] of Object.entries(output.contracts?.[unit] ?? {})) {
    const object = c.evm?.bytecode?.object ?? '';
    if (object.length === 0) continue;
    artifacts.push({ contractName, abi: c.abi, bytecode: `0x${object}` });
  }
}

mkdirSync(outDir, { recursive: true });
// Drop artifacts of contracts that no longer exist.
const names = new Set(artifacts.map((a) => a.contractName));
for (const f of readdirSync(outDir)) {
  if (f.endsWith('.json') && !names.has(f.slice(0, -5))) rmSync(join(outDir, f));
}
// Write-then-rename so a concurrently starting process never reads a half-written artifact.
function writeAtomic(file, data) {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, file);
}
for (const a of artifacts) {
  writeAtomic(join(outDir, `${a.contractName}.json`), `${JSON.stringify(a, null, 2)}\n`);
}
// The hash goes last: an interrupted build is simply redone next time.
writeAtomic(hashFile, JSON.stringify({ hash, contracts: [...names].sort() }));

console.log(
  `contracts: compiled ${artifacts.map((a) => a.contractName).join(', ')} ` +
    `with solc ${solc.version()} in ${((Date.now() - started) / 1000).toFixed(1)}s` +
    (diagnostics.length > errors.length ? ` (${diagnostics.length - errors.length} warning(s))` : ''),
);

function fail(message) {
  console.error(`contracts: ${message}`);
  process.exit(1);
}
