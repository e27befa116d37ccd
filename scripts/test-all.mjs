// `npm test`: every phase of the suite, one after another, each run even when an earlier one failed
// (a failing integration test must not hide the browser tests' result), then one summary with each
// phase's outcome and duration. Exit status 1 if any phase failed.
//   npm test                                  every phase
//   node scripts/test-all.mjs unit browser    only those phases, in the order of PHASES
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** [name, npm script]: the build first (the later phases run what it built). */
const PHASES = [
  ['build', 'build'],
  ['lint', 'lint'],
  ['lint:deps', 'lint:deps'],
  ['typecheck', 'typecheck'],
  ['unit', 'test:unit'],
  ['integration', 'test:integration'],
  ['browser', 'test:browser'],
];

const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !PHASES.some(([name]) => name === w));
if (unknown.length) {
  console.error(`unknown phase(s): ${unknown.join(', ')}; the phases: ${PHASES.map(([n]) => n).join(', ')}`);
  process.exit(2);
}
const phases = wanted.length ? PHASES.filter(([name]) => wanted.includes(name)) : PHASES;

const minutes = (ms) => (ms >= 60_000 ? `${(ms / 60_000).toFixed(1)} min` : `${(ms / 1000).toFixed(1)} s`);
const results = [];
const started = Date.now();
// The test phases' reporters append each failing test and its error here (scripts/test-failures.mjs).
const failuresDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mintworks-test-'));
for (const [name, script] of phases) {
  console.log(`\n===== ${name} (npm run ${script})`);
  const t0 = Date.now();
  const TEST_FAILURES_FILE = path.join(failuresDir, `${name.replace(/\W/g, '-')}.txt`);
  const r = spawnSync(npm, ['run', '--silent', script], { cwd: root, stdio: 'inherit', env: { ...process.env, TEST_FAILURES_FILE } });
  const status = r.status ?? 1;
  const failures = fs.existsSync(TEST_FAILURES_FILE) ? fs.readFileSync(TEST_FAILURES_FILE, 'utf8') : '';
  results.push({ name, ok: status === 0, ms: Date.now() - t0, why: r.signal ? `killed by ${r.signal}` : `exit ${status}`, failures });
}
fs.rmSync(failuresDir, { recursive: true, force: true });

console.log('\n===== summary');
for (const r of results) console.log(`${r.ok ? 'passed' : 'FAILED'}  ${r.name.padEnd(12)} ${minutes(r.ms).padStart(9)}${r.ok ? '' : `  (${r.why})`}`);
const failed = results.filter((r) => !r.ok);
// The failures again, near the end: a CI log is read from its tail.
for (const r of failed.filter((r) => r.failures)) console.log(`\n===== ${r.name}: the failing tests, with their errors\n\n${r.failures.trimEnd()}`);
console.log(`\n${failed.length ? `FAILED: ${failed.map((r) => r.name).join(', ')}` : 'all phases passed'} in ${minutes(Date.now() - started)}`);
process.exit(failed.length ? 1 : 0);
