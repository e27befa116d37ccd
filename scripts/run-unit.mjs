// Runs the unit suite (test/unit) in a few processes instead of one per file: starting Node with the
// TypeScript loader costs about a second of CPU, more than most files' tests. The files are dealt into
// UNIT_PROCESSES groups (default 3), each group one process that imports its files, the groups run side by
// side (most files wait on timers and child processes more than they compute).
//   npm run test:unit                      every file
//   node scripts/run-unit.mjs a.test.ts    only those files (each in a process of its own)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const listed = process.argv.slice(2);
const reporter = ['--test-reporter=spec', '--test-reporter-destination=stdout'];
// Each failure with its error, for `npm test` to repeat at the end of the log.
reporter.push('--test-reporter=./scripts/test-failures.mjs', '--test-reporter-destination=stdout');
// A test process that has not ended after this long (a group's whole run, tests and exit) fails under its
// own name instead of holding the suite, and CI, until something kills it.
const TEST_TIMEOUT_MS = Number(process.env.UNIT_TEST_TIMEOUT_MS ?? 300_000);
const node = (args) =>
  spawnSync(process.execPath, ['--import', 'tsx', '--test', `--test-timeout=${TEST_TIMEOUT_MS}`, ...reporter, ...args], { cwd: root, stdio: 'inherit' })
    .status ?? 1;

if (listed.length) process.exit(node(listed));

const dir = path.join(root, 'test/unit');
const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.test.ts'))
  .sort()
  .map((f) => path.join(dir, f));
const wanted = Number(process.env.UNIT_PROCESSES ?? 3);
if (!Number.isInteger(wanted) || wanted < 1) {
  console.error(`UNIT_PROCESSES must be a whole number of at least 1 (got ${process.env.UNIT_PROCESSES})`);
  process.exit(2);
}
const groups = Math.min(files.length, wanted);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mintworks-unit-'));
const entries = [];
for (let g = 0; g < groups; g++) {
  const mine = files.filter((_, i) => i % groups === g);
  const entry = path.join(tmp, `group-${g + 1}.mjs`);
  // A file that fails to load is a failing test named after it, and the group's other files still run.
  const lines = mine.map(
    (f) =>
      `try { await import(${JSON.stringify(`file://${f}`)}); } catch (e) { test(${JSON.stringify(`load ${path.relative(root, f)}`)}, () => { throw e; }); }`,
  );
  fs.writeFileSync(entry, [`import { test } from 'node:test';`, ...lines].join('\n') + '\n');
  entries.push(entry);
}
const status = node([`--test-concurrency=${groups}`, ...entries]);
fs.rmSync(tmp, { recursive: true, force: true });
process.exit(status);
