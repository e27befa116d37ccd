// Compiles the sources and the tests once, file by file, into a mirror of the checkout
// (node_modules/.cache/mintworks-compiled/), for the unit suite to run without the TypeScript loader: under
// `--import tsx` every module a test process imports goes through the loader's thread (resolved, then
// read from its cache or compiled), about 2 s of CPU per process before the first test runs.
//
// The mirror has the checkout's layout, so paths computed from a module's own place hold:
//   src/, test/, console/  each .ts compiled to .js beside its name (imports already say .js), other
//                 files linked;
//   dist          a link to the mirror's src/: a thread started from the compiled code (src/util/
//                 build-paths.ts) runs these modules, not an older build's;
//   the rest      links to the checkout's own (node_modules, build, docs, package.json, …).
// Only files changed since the last run are compiled again; files gone from the checkout are removed.
// Run alone, it says how many it compiled: node scripts/compile-tests.mjs
import fs from 'node:fs';
import path from 'node:path';
import { transform } from 'esbuild';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
export const compiledRoot = path.join(root, 'node_modules/.cache/mintworks-compiled');
const COMPILED_DIRS = ['src', 'test', 'console'];
const NOT_LINKED = new Set([...COMPILED_DIRS, 'dist', '.git']);
// The build's TypeScript settings (class fields, strict mode), as tsc compiles src/ for dist/.
const { compilerOptions } = JSON.parse(fs.readFileSync(path.join(root, 'tsconfig.json'), 'utf8'));

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

/** Brings the mirror up to date; answers the number of files compiled. */
export async function compileTests() {
  fs.mkdirSync(compiledRoot, { recursive: true });
  // A compiled directory must be a directory of the mirror, never a link into the checkout (one left by a
  // run before it was compiled): what is written under it would land in the checkout.
  for (const dir of COMPILED_DIRS) {
    const at = path.join(compiledRoot, dir);
    if (fs.lstatSync(at, { throwIfNoEntry: false })?.isSymbolicLink()) fs.rmSync(at);
  }
  for (const entry of fs.readdirSync(root)) {
    if (!NOT_LINKED.has(entry)) link(path.join(root, entry), path.join(compiledRoot, entry));
  }
  link(path.join(compiledRoot, 'src'), path.join(compiledRoot, 'dist'));

  const wanted = new Set();
  const jobs = [];
  for (const dir of COMPILED_DIRS) {
    for (const rel of filesUnder(dir)) {
      const from = path.join(root, rel);
      if (rel.endsWith('.ts') && !rel.endsWith('.d.ts')) {
        const to = path.join(compiledRoot, rel.slice(0, -3) + '.js');
        wanted.add(to);
        // A compiled file carries its source's modification time: any other time (a checkout of older
        // files included) is a source it was not compiled from.
        // (to the millisecond: what utimes keeps).
        const sourceTime = new Date(Math.round(fs.statSync(from).mtimeMs));
        if (Math.round(fs.statSync(to, { throwIfNoEntry: false })?.mtimeMs ?? -1) === sourceTime.getTime()) continue;
        jobs.push(
          transform(fs.readFileSync(from, 'utf8'), {
            loader: 'ts',
            format: 'esm',
            target: 'node20',
            sourcemap: 'inline',
            sourcefile: from,
            tsconfigRaw: { compilerOptions },
          }).then(({ code }) => {
            fs.mkdirSync(path.dirname(to), { recursive: true });
            // Written aside and renamed: a run beside this one never imports half a file.
            const part = `${to}.${process.pid}.part`;
            fs.writeFileSync(part, code);
            fs.utimesSync(part, sourceTime, sourceTime);
            fs.renameSync(part, to);
          }),
        );
      } else {
        const to = path.join(compiledRoot, rel);
        wanted.add(to);
        link(from, to);
      }
    }
  }
  await Promise.all(jobs);
  // What the checkout no longer has: a stale module must not stay importable.
  for (const dir of COMPILED_DIRS) {
    for (const e of fs.readdirSync(path.join(compiledRoot, dir), { recursive: true, withFileTypes: true })) {
      const p = path.join(e.parentPath ?? e.path, e.name);
      if (!e.isDirectory() && !wanted.has(p)) fs.rmSync(p, { force: true });
    }
  }
  return jobs.length;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const t0 = Date.now();
  const n = await compileTests();
  console.log(`compiled ${n} files into ${path.relative(root, compiledRoot)} in ${Date.now() - t0} ms`);
}
