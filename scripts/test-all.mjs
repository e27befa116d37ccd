// `npm test`: every phase of the suite in order (the checks beside the unit suite), each run even when
// an earlier one failed (a failing integration test must not hide the browser tests' result), then one
// summary with each phase's outcome and duration. Exit status 1 if any phase failed.
//   npm test                                  every phase
//   node scripts/test-all.mjs unit browser    only those phases, in the order of PHASES
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/**
 * [name, npm script, side by side]: the build first (the later phases run what it built). Consecutive
 * phases marked side by side run at once, their output held and printed in this order when the last
 * ends: the checks and the unit suite each leave a core idle part of the time (tsc is one thread).
 */
const PHASES = [
  ['build', 'build'],
  ['lint', 'lint', true],
  ['lint:deps', 'lint:deps', true],
  ['typecheck', 'typecheck', true],
  ['unit', 'test:unit', true],
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
/** Runs one phase; `held` keeps its output (printed by the caller) instead of passing it through. */
function runPhase([name, script], held) {
  const t0 = Date.now();
  const TEST_FAILURES_FILE = path.join(failuresDir, `${name.replace(/\W/g, '-')}.txt`);
  const child = spawn(npm, ['run', '--silent', script], {
    cwd: root,
    stdio: held ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    env: { ...process.env, TEST_FAILURES_FILE },
  });
  const out = [];
  child.stdout?.on('data', (d) => out.push(d));
  child.stderr?.on('data', (d) => out.push(d));
  return new Promise((resolve) =>
    child.on('close', (code, signal) => {
      const failures = fs.existsSync(TEST_FAILURES_FILE) ? fs.readFileSync(TEST_FAILURES_FILE, 'utf8') : '';
      const status = code ?? 1;
      resolve({ name, script, ok: status === 0, ms: Date.now() - t0, why: signal ? `killed by ${signal}` : `exit ${status}`, failures, out });
    }),
  );
}

for (let i = 0; i < phases.length; ) {
  let j = i + 1;
  while (phases[i][2] && j < phases.length && phases[j][2]) j++;
  const group = phases.slice(i, j);
  if (group.length === 1) console.log(`\n===== ${group[0][0]} (npm run ${group[0][1]})`);
  else console.log(`\n===== ${group.map((p) => p[0]).join(', ')}: side by side, each one's output when all have ended`);
  const done = await Promise.all(group.map((p) => runPhase(p, group.length > 1)));
  for (const r of done) {
    if (group.length > 1) {
      console.log(`\n===== ${r.name} (npm run ${r.script}), ${minutes(r.ms)}`);
      process.stdout.write(Buffer.concat(r.out));
    }
    results.push(r);
  }
  i = j;
}
fs.rmSync(failuresDir, { recursive: true, force: true });

console.log('\n===== summary');
for (const r of results) console.log(`${r.ok ? 'passed' : 'FAILED'}  ${r.name.padEnd(12)} ${minutes(r.ms).padStart(9)}${r.ok ? '' : `  (${r.why})`}`);
const failed = results.filter((r) => !r.ok);
// The failures again, near the end: a CI log is read from its tail.
for (const r of failed.filter((r) => r.failures)) console.log(`\n===== ${r.name}: the failing tests, with their errors\n\n${r.failures.trimEnd()}`);
console.log(`\n${failed.length ? `FAILED: ${failed.map((r) => r.name).join(', ')}` : 'all phases passed'} in ${minutes(Date.now() - started)}`);
process.exit(failed.length ? 1 : 0);
