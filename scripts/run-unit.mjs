// Runs the unit suite (test/unit) in a few processes instead of one per file: importing the modules a
// file tests costs more CPU than most files' tests. UNIT_PROCESSES processes (default 2) run side by side
// and take the files one at a time from a shared list, the next file going to whichever process
// finishes first: some files mostly wait (timeouts, child processes) while others compute, and a fixed
// split left one process running long after the others. Each process costs its own imports, so on 2
// cores two beat three.
// The tests run compiled (scripts/compile-tests.mjs: the files changed since the last run, in about a
// second for all), not under the TypeScript loader, which cost each process about 2 s of CPU more;
// stack traces still name the .ts files and their lines (source maps).
//   npm run test:unit                           every file
//   node scripts/run-unit.mjs test/unit/a.test.ts  only those files (each in a process of its own)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawn } from 'node:child_process';
import { compiledPath, compileTests, mirrorOf, sourceName } from './compile-tests.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const listed = process.argv.slice(2);
const reporter = ['--test-reporter=spec', '--test-reporter-destination=stdout'];
// Each failure with its error, for `npm test` to repeat at the end of the log.
reporter.push('--test-reporter=./scripts/test-failures.mjs', '--test-reporter-destination=stdout');
// A test process that has not ended after this long (a group's whole run, tests and exit) fails under its
// own name instead of holding the suite, and CI, until something kills it.
const TEST_TIMEOUT_MS = Number(process.env.UNIT_TEST_TIMEOUT_MS ?? 300_000);
/** Runs node --test on `args`; resolves with its exit status. */
const node = (args, env = process.env) =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, ['--enable-source-maps', '--test', `--test-timeout=${TEST_TIMEOUT_MS}`, ...reporter, ...args], {
      cwd: root,
      stdio: 'inherit',
      env,
    });
    child.once('error', (err) => {
      console.error(err);
      resolve(1);
    });
    child.once('exit', (code) => resolve(code ?? 1));
  });

await compileTests('unit');

if (listed.length) process.exit(await node(listed.map((f) => compiledPath('unit', f))));

const { SHARED_SCHEMAS_ENV, writeSharedSchemas } = await import(pathToFileURL(path.join(mirrorOf('unit'), 'test/helpers/schema-copies.js')).href);
const dir = path.join(mirrorOf('unit'), 'test/unit');
const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.test.js'))
  .sort()
  .map((f) => path.join(dir, f));
const wanted = Number(process.env.UNIT_PROCESSES ?? 2);
if (!Number.isInteger(wanted) || wanted < 1) {
  console.error(`UNIT_PROCESSES must be a whole number of at least 1 (got ${process.env.UNIT_PROCESSES})`);
  process.exit(2);
}
const groups = Math.min(files.length, wanted);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mintworks-unit-'));
// A file is taken by creating its directory here: only one process can. Any other failure to create it
// fails the process, so a file is never skipped unseen.
const claims = path.join(tmp, 'claims');
fs.mkdirSync(claims);
// node:test runs a process's top-level tests one after another, in the order they were declared, so the
// empty test declared after a file's own ends after them: awaiting it is awaiting the file. A file that
// fails to load is a failing test named after it, and the process goes on with the next file.
const takeFiles = `import fs from 'node:fs';
import { test } from 'node:test';
const files = ${JSON.stringify(files.map((f) => [pathToFileURL(f).href, sourceName(f)]))};
for (const [i, [url, name]] of files.entries()) {
  try {
    fs.mkdirSync(${JSON.stringify(claims)} + '/' + i);
  } catch (e) {
    if (e.code === 'EEXIST') continue; // another process has it
    throw e;
  }
  try { await import(url); } catch (e) { test('load ' + name, () => { throw e; }); }
  await test(name + ': done', () => {});
}
`;
const entries = [];
for (let g = 0; g < groups; g++) {
  // One entry file per process: node --test runs each file given in a process of its own.
  const entry = path.join(tmp, `process-${g + 1}.mjs`);
  fs.writeFileSync(entry, takeFiles);
  entries.push(entry);
}
// The processes copy the schemas migrated here once, instead of each migrating its own; they start
// meanwhile, and wait for the schemas only when a test first asks for a database.
const schemasFile = path.join(tmp, 'schemas.json');
const running = node([`--test-concurrency=${groups}`, ...entries], { ...process.env, [SHARED_SCHEMAS_ENV]: schemasFile });
await writeSharedSchemas(schemasFile);
const status = await running;
fs.rmSync(tmp, { recursive: true, force: true });
process.exit(status);
