// Runs the integration suite (test/chain, test/integration) in two phases, so that it fits CI's budget
// on a small machine without measuring anything under a neighbour's load:
//   1. every file not marked exclusive, several at a time (each starts its own servers on free ports
//      and its own databases, so files share nothing);
//   2. the files whose first lines say `test:exclusive` (they measure throughput, latency or timing
//      against a budget), one after another with the machine to themselves.
// INTEGRATION_CONCURRENCY sets phase 1's width (default 4: most files wait on chains and processes more than they use the CPU); extra arguments run only those files.
// The files run compiled (scripts/compile-tests.mjs), not under the TypeScript loader: a file and the
// threads of each service it starts import their modules without the loader's thread, about 40 % less
// CPU per file. What the tests start as commands, and the services' threads, run the build (dist/): it
// is brought up to date first.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { compiledPath, compileTests } from './compile-tests.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const listed = process.argv.slice(2);
const files = listed.length
  ? listed
  : ['test/chain', 'test/integration'].flatMap((dir) =>
      fs
        .readdirSync(path.join(root, dir))
        .filter((f) => f.endsWith('.test.ts'))
        .map((f) => `${dir}/${f}`),
    );
const exclusive = (f) => /test:exclusive/.test(fs.readFileSync(path.join(root, f), 'utf8').split('\n').slice(0, 20).join('\n'));
// The longest files start first, so that phase 1 does not end waiting on one that started last
// (their order here: longest first, as measured in CI on a 2-core machine, 49-109 s each; a suite run
// on both databases counts as two files of about half its time; the rest follow by name).
const LONGEST = [
  'cli-and-logs',
  'rewards.postgres',
  'rewards.sqlite',
  'pg-failover',
  'paging',
  'cli-audit',
  'chain-truth',
  'managed-postgres',
  'operator-safety.postgres',
  'operator-safety.sqlite',
  'production',
  'pg-races',
  'relayer-rotation-crash',
  'chain-verify.postgres',
  'chain-verify.sqlite',
  'lifecycle.postgres',
  'lifecycle.sqlite',
  'webhooks.postgres',
  'webhooks.sqlite',
  'fuzz.postgres',
  'fuzz.sqlite',
  'relayer-rotation.postgres',
  'production-hsm',
  'chain-ops',
  'backup',
];
const rank = (f) => {
  const i = LONGEST.indexOf(path.basename(f).replace(/\.test\.ts$/, ''));
  return i < 0 ? LONGEST.length : i;
};
const shared = files
  .filter((f) => !exclusive(f))
  .sort()
  .sort((a, b) => rank(a) - rank(b));
const alone = files.filter(exclusive).sort();
const width = process.env.INTEGRATION_CONCURRENCY ?? '4';

function run(list, concurrency) {
  if (list.length === 0) return 0;
  console.log(`\n== ${list.length} file(s), ${concurrency} at a time: ${list.join(' ')}`);
  const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout'];
  // After the run, each file's time, longest first (what to look at when the suite nears CI's budget).
  reporters.push('--test-reporter=./scripts/test-file-times.mjs', '--test-reporter-destination=stdout');
  // Each failure with its error, for `npm test` to repeat at the end of the log.
  reporters.push('--test-reporter=./scripts/test-failures.mjs', '--test-reporter-destination=stdout');
  const compiled = list.map((f) => compiledPath('integration', f));
  const r = spawnSync(process.execPath, ['--enable-source-maps', '--test', `--test-concurrency=${concurrency}`, ...reporters, ...compiled], {
    cwd: root,
    stdio: 'inherit',
  });
  return r.status ?? 1;
}

const built = spawnSync(process.execPath, [path.join(root, 'scripts/build-if-stale.mjs')], { cwd: root, stdio: 'inherit' });
if (built.status !== 0) process.exit(built.status ?? 1);
await compileTests('integration');
const started = Date.now();
const first = run(shared, width);
const second = run(alone, '1');
console.log(`\n== integration: ${((Date.now() - started) / 60000).toFixed(1)} min, ${first || second ? 'FAILED' : 'passed'}`);
process.exit(first || second);
