// Compiles the sources and the tests once, file by file, into a mirror of the checkout
// (node_modules/.cache/mintworks-tests/<suite>/), for the test suites to run without the TypeScript
// loader: under `--import tsx` every module a test process imports goes through the loader's thread
// (resolved, then read from its cache or compiled), about 2 s of CPU per process and per thread of a
// service the process starts, before the first test runs.
//
// A mirror has the checkout's layout, so paths computed from a module's own place hold:
//   src/, test/, console/  each .ts compiled to .js beside its name (imports already say .js); every
//                 file linked as well, the .ts ones included, so the mirror holds all the checkout
//                 holds (a command started from the sources with tsx runs there too);
//   dist          unit: a link to the mirror's src/, so that a thread started from the compiled code
//                 (src/util/build-paths.ts) runs these modules and no build is needed;
//                 integration: a link to the checkout's dist/, the build those tests start as commands
//                 (and the services' threads run: scripts/run-integration.mjs builds first if stale);
//   the rest      links to the checkout's own (node_modules, build, docs, package.json, …).
// Only files changed since the last run are compiled again; files gone from the checkout are removed.
// Run alone, it says how many it compiled: node scripts/compile-tests.mjs unit|integration
import fs from 'node:fs';
import path from 'node:path';
import { transform } from 'esbuild';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const mirrorsDir = path.join(root, 'node_modules/.cache/mintworks-tests');
const COMPILED_DIRS = ['src', 'test', 'console'];
const NOT_LINKED = new Set([...COMPILED_DIRS, 'dist', '.git']);
// The build's TypeScript settings (class fields, strict mode), as tsc compiles src/ for dist/.
const { compilerOptions } = JSON.parse(fs.readFileSync(path.join(root, 'tsconfig.json'), 'utf8'));

/** The mirror of `suite` ('unit' or 'integration'). */
export const mirrorOf = (suite) => path.join(mirrorsDir, suite);

/** Where the compiled form of a test file of the checkout is, in `suite`'s mirror. */
export const compiledPath = (suite, file) => path.join(mirrorOf(suite), path.relative(root, path.resolve(root, file))).replace(/\.ts$/, '.js');

/** The checkout's name of a file of a mirror (what to report), or the file itself outside them. */
export function sourceName(file) {
  const rel = path.relative(mirrorsDir, file);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return path.relative(root, file);
  return rel.split(path.sep).slice(1).join('/').replace(/\.js$/, '.ts');
}

/** Every file under `dir`, relative to the checkout. */
function filesUnder(dir) {
  return fs
    .readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath ?? e.path, e.name)));
}

function link(target, at) {
  try {
    if (fs.readlinkSync(at) === target) return;
    fs.rmSync(at, { force: true });
  } catch {
    /* not there yet */
  }
  fs.mkdirSync(path.dirname(at), { recursive: true });
  fs.symlinkSync(target, at);
}

/** Compiles `from` to `to`, which carries `from`'s modification time. */
async function compile(from, to, sourceTime) {
  const { code } = await transform(fs.readFileSync(from, 'utf8'), {
    loader: 'ts',
    format: 'esm',
    target: 'node20',
    sourcemap: 'inline',
    sourcefile: from,
    tsconfigRaw: { compilerOptions },
  });
  fs.mkdirSync(path.dirname(to), { recursive: true });
  // Written aside and renamed: a run beside this one never imports half a file.
  const part = `${to}.${process.pid}.part`;
  fs.writeFileSync(part, code);
  fs.utimesSync(part, sourceTime, sourceTime);
  fs.renameSync(part, to);
}

/** Brings `suite`'s mirror up to date; answers the number of files compiled. */
export async function compileTests(suite) {
  if (suite !== 'unit' && suite !== 'integration') throw new Error(`compileTests: unit or integration, not ${suite}`);
  const mirror = mirrorOf(suite);
  fs.mkdirSync(mirror, { recursive: true });
  // A compiled directory must be a directory of the mirror, never a link into the checkout: what is
  // written under it would land in the checkout.
  for (const dir of COMPILED_DIRS) {
    const at = path.join(mirror, dir);
    if (fs.lstatSync(at, { throwIfNoEntry: false })?.isSymbolicLink()) fs.rmSync(at);
  }
  for (const entry of fs.readdirSync(root)) {
    if (!NOT_LINKED.has(entry)) link(path.join(root, entry), path.join(mirror, entry));
  }
  link(suite === 'unit' ? path.join(mirror, 'src') : path.join(root, 'dist'), path.join(mirror, 'dist'));

  const wanted = new Set();
  const jobs = [];
  for (const dir of COMPILED_DIRS) {
    for (const rel of filesUnder(dir)) {
      const from = path.join(root, rel);
      const at = path.join(mirror, rel);
      wanted.add(at);
      link(from, at);
      if (!rel.endsWith('.ts') || rel.endsWith('.d.ts')) continue;
      const to = `${at.slice(0, -3)}.js`;
      wanted.add(to);
      // A compiled file carries its source's modification time (to the millisecond: what utimes
      // keeps); any other time, a checkout of older files included, is a source it was not compiled from.
      const sourceTime = new Date(Math.round(fs.statSync(from).mtimeMs));
      if (Math.round(fs.statSync(to, { throwIfNoEntry: false })?.mtimeMs ?? -1) !== sourceTime.getTime()) jobs.push(compile(from, to, sourceTime));
    }
  }
  await Promise.all(jobs);
  // What the checkout no longer has: a stale module must not stay importable.
  for (const dir of COMPILED_DIRS) {
    for (const e of fs.readdirSync(path.join(mirror, dir), { recursive: true, withFileTypes: true })) {
      const p = path.join(e.parentPath ?? e.path, e.name);
      if (!e.isDirectory() && !wanted.has(p)) fs.rmSync(p, { force: true });
    }
  }
  return jobs.length;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const suite = process.argv[2] ?? 'unit';
  const t0 = Date.now();
  const n = await compileTests(suite);
  console.log(`compiled ${n} files into ${path.relative(root, mirrorOf(suite))} in ${Date.now() - t0} ms`);
}
