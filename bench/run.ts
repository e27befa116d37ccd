// All benches in sequence, each in its own process (one bench's service, chain and memory never
// overlap another's): prints their JSON lines, writes them to bench/results.json and ends with a
// markdown table against the targets. The environment is passed on (BENCH_DB, BENCH_SECONDS,
// BENCH_MINT_N, BENCH_EVENTS, …). Exit status 1 if a bench failed (the others still run).
//   npm run bench                      (builds first)
//   node --import tsx bench/run.ts     (uses the current dist/)
//   node --import tsx bench/run.ts --summary   (the table again, from bench/results.json)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root } from './lib.js';

// BENCH_ONLY=http,mint runs some of them (scale.ts alone bulk-loads a million assets per database).
const ALL = ['http.ts', 'mint.ts', 'custody.ts', 'gas.ts', 'webhooks.ts', 'webhook-lag.ts', 'first-mint.ts', 'scale.ts'];
const SCRIPTS = process.env.BENCH_ONLY ? ALL.filter((s) => process.env.BENCH_ONLY!.split(',').includes(s.replace(/\.ts$/, ''))) : ALL;

type Line = Record<string, any>;

/** Runs one bench; its stdout lines that are JSON objects with a `bench` field are its results. */
function runScript(script: string): Promise<{ code: number | null; signal: string | null; lines: Line[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'bench', script)], {
      cwd: root,
      env: process.env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => (out += d));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      const lines: Line[] = [];
      for (const text of out.split('\n')) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          if (text.trim()) process.stderr.write(`${text}\n`); // not a result: show it, as stderr is
          continue;
        }
        if (parsed && typeof parsed === 'object' && 'bench' in parsed) lines.push(parsed as Line);
      }
      resolve({ code, signal, lines });
    });
  });
}

// ---------------------------------------------------------------------------------------- summary

interface Row {
  measure: string;
  bench: string;
  value: (l: Line) => number | undefined;
  /** Per database; `undefined` = no target. */
  target?: { sqlite: Check; postgres: Check };
}
interface Check {
  op: '>=' | '<=';
  limit: number;
}
const atLeast = (sqlite: number, postgres = sqlite) => ({ sqlite: { op: '>=', limit: sqlite }, postgres: { op: '>=', limit: postgres } }) as Row['target'];
const atMost = (sqlite: number, postgres = sqlite) => ({ sqlite: { op: '<=', limit: sqlite }, postgres: { op: '<=', limit: postgres } }) as Row['target'];

// The targets are the performance acceptance's: ratios to a baseline of the same run where one exists;
// the p99s and the memory are absolute, so they depend on the machine (the bare route's p99 is beside them).
const ROWS: Row[] = [
  { measure: 'POST /asset ratio to bare Fastify', bench: 'http', value: (l) => l.post_asset?.ratio, target: atLeast(0.3, 0.25) },
  { measure: 'POST /asset p99 (ms)', bench: 'http', value: (l) => l.post_asset?.p99, target: atMost(30) },
  // The bare route's own p99 under the same 64 connections: how much of the service's is the machine's.
  { measure: 'POST p99 of the bare Fastify route (ms)', bench: 'http', value: (l) => l.post_asset?.bare_p99 },
  { measure: 'POST /asset ratio, workers off (the API alone)', bench: 'http', value: (l) => l.post_asset_workers_off?.ratio },
  { measure: 'GET /asset ratio to bare Fastify', bench: 'http', value: (l) => l.get_asset?.ratio, target: atLeast(0.8) },
  { measure: 'GET /asset p99 (ms)', bench: 'http', value: (l) => l.get_asset?.p99 },
  { measure: 'Peak RSS, HTTP bench, burst and drain (MB)', bench: 'http', value: (l) => l.peak_rss_mb, target: atMost(250) },
  { measure: 'Mint pipeline ratio to chain capacity', bench: 'mint_pipeline', value: (l) => l.ratio, target: atLeast(0.53) },
  { measure: 'Mint pipeline minted/s', bench: 'mint_pipeline', value: (l) => l.minted_per_s },
  { measure: 'Peak RSS, mint drain (MB)', bench: 'mint_pipeline', value: (l) => l.peak_rss_mb, target: atMost(300) },
  { measure: 'Mint pipeline with keys in SoftHSM2, ratio to local keys', bench: 'custody', value: (l) => l.ratio, target: atLeast(0.9) },
  { measure: 'First mint of a new collection after its deployment, median ÷ a deployed collection’s mint', bench: 'first_mint', value: (l) => l.ratio },
  { measure: 'First mint of a new collection after its deployment, slowest round (ms)', bench: 'first_mint', value: (l) => l.max_after_deploy_ms },
  { measure: 'Gas per token, production, batched', bench: 'gas', value: (l) => l.prod_batched_per_token, target: atMost(60_000) },
  { measure: 'Gas, production, single mint', bench: 'gas', value: (l) => l.prod_single, target: atMost(100_000) },
  { measure: 'Gas per token, development, batched', bench: 'gas', value: (l) => l.dev_batched_per_token, target: atMost(35_000) },
  { measure: 'Gas, development, single mint', bench: 'gas', value: (l) => l.dev_single },
  { measure: 'Webhooks (8 Apps) ratio to raw POSTs', bench: 'webhooks', value: (l) => l.ratio_8_apps_to_baseline, target: atLeast(0.3) },
  { measure: 'Webhooks (8 Apps) ratio to kept-alive raw POSTs', bench: 'webhooks', value: (l) => l.ratio_8_apps_to_keepalive_baseline },
  { measure: 'Webhooks: 7 Apps kept beside a hanging endpoint', bench: 'webhooks', value: (l) => l.isolation?.kept_beside_hanging, target: atLeast(0.9) },
  { measure: 'Webhooks: 7 Apps kept beside a failing endpoint', bench: 'webhooks', value: (l) => l.isolation?.kept_beside_failing, target: atLeast(0.9) },
  { measure: 'Last asset.minted after all minted, 1,600 assets / 8 Apps (s)', bench: 'webhook_lag', value: (l) => l.lag_s, target: atMost(3) },
  { measure: 'Reads at 1M assets within 1.5× their p99 at 10k (or ≤ 30 ms)', bench: 'scale', value: (l) => (l.all_flat ? 1 : 0), target: atLeast(1) },
  {
    // The figure test/integration/list-plans.test.ts used to assert: the test keeps the plan and an order of magnitude.
    measure: "A 5-asset user's list beside a vault user of 1M, p99 at 16 connections (ms)",
    bench: 'scale',
    value: (l) => l.sizes?.[l.sizes.length - 1]?.reads?.['GET /asset?user_uid (5 assets)']?.p99,
    target: atMost(30),
  },
  {
    measure: "The vault user's first page (1,000 assets) beside 1M, p99 at 16 connections (ms)",
    bench: 'scale',
    value: (l) => l.sizes?.[l.sizes.length - 1]?.reads?.['GET /asset?user_uid (vault user, first page)']?.p99,
    target: atMost(150),
  },
  { measure: 'Start-up with 1M assets (s)', bench: 'scale', value: (l) => l.sizes?.[l.sizes.length - 1]?.start_s, target: atMost(10) },
];

function summary(lines: Line[]): string {
  const cell = (row: Row, db: 'sqlite' | 'postgres') => {
    const line = lines.find((l) => l.bench === row.bench && l.db === db);
    const v = line ? row.value(line) : undefined;
    if (v === undefined || v === null) return '–';
    const t = row.target?.[db];
    if (!t) return String(v);
    return `${v} ${(t.op === '>=' ? v >= t.limit : v <= t.limit) ? '✓' : '✗'}`;
  };
  const target = (row: Row) => {
    if (!row.target) return '';
    const { sqlite, postgres } = row.target;
    return sqlite.limit === postgres.limit
      ? `${sqlite.op === '>=' ? '≥' : '≤'}${sqlite.limit}`
      : `${sqlite.op === '>=' ? '≥' : '≤'}${sqlite.limit} / ${postgres.limit}`;
  };
  const out = ['| measure | sqlite | postgres | target (sqlite / pg) |', '|---|---|---|---|'];
  for (const row of ROWS) out.push(`| ${row.measure} | ${cell(row, 'sqlite')} | ${cell(row, 'postgres')} | ${target(row)} |`);
  return out.join('\n');
}

async function main(): Promise<void> {
  const results: Line[] = [];
  const failures: { script: string; code: number | null; signal: string | null }[] = [];

  for (const script of SCRIPTS) {
    process.stderr.write(`\n--- bench/${script}\n`);
    const started = Date.now();
    const { code, signal, lines } = await runScript(script);
    for (const l of lines) {
      console.log(JSON.stringify(l));
      results.push(l);
    }
    if (code !== 0) failures.push({ script, code, signal });
    process.stderr.write(`--- bench/${script}: ${code === 0 ? 'ok' : `FAILED (${code ?? signal})`} in ${Math.round((Date.now() - started) / 1000)} s\n`);
  }

  const file = path.join(root, 'bench/results.json');
  fs.writeFileSync(file, JSON.stringify({ at: new Date().toISOString(), node: process.version, cpus: os.cpus().length, results, failures }, null, 2) + '\n');
  process.stderr.write(`\nwrote ${path.relative(process.cwd(), file)}\n\n`);
  console.log(summary(results));
  if (failures.length) {
    console.log(`\nFailed: ${failures.map((f) => `${f.script} (${f.code ?? f.signal})`).join(', ')}`);
    process.exitCode = 1;
  }
}

// `--summary`: only the table again, from bench/results.json. Called last, so that everything above is
// initialised when it runs.
if (process.argv.includes('--summary'))
  console.log(summary((JSON.parse(fs.readFileSync(path.join(root, 'bench/results.json'), 'utf8')) as { results: Line[] }).results));
else await main();
