// test:exclusive — measures latency; run with the machine to itself (scripts/run-integration.mjs).
// POST -> minted on PostgreSQL, one process against an API process and a worker process apart, in the
// same run on the same database and chain (`mintworks chain start`, a block per transaction, so the
// pipeline is what is measured): the worker process is woken by PostgreSQL (migration 019's
// notifications) and must start a new job within milliseconds, not at its next poll. The same split
// without the notifications (their triggers dropped) is measured too: the wake-ups must remove at least
// half of what polling adds to the single process's median. Both sides are measured in the same run,
// and polling's cost is timers (hundreds of ms), not CPU, so a busy machine meets it too; the figures
// (the split within 1.5x of one process on a quiet machine) are printed and belong to bench/README.md.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ApiClient, demoEnv, freePort, freshPostgres, tempDir, waitFor } from '../helpers/env.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SAMPLES = 25;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

describe('POST -> minted: one process against an API and a worker process (postgres)', () => {
  const children: ChildProcess[] = [];
  let pgdb: Awaited<ReturnType<typeof freshPostgres>> | null = null;
  const stop = async (c: ChildProcess) => {
    if (c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await exited;
  };
  after(async () => {
    for (const c of children) await stop(c);
    await pgdb?.drop();
  });

  it('the wake-ups remove most of what polling adds to the split', async () => {
    pgdb = await freshPostgres();
    const dir = tempDir('mintworks-split-');
    const dataDir = path.join(dir, 'data');
    const chainPort = await freePort();
    const start = (args: string[], env: Record<string, string>, log: string) => {
      const out = fs.openSync(path.join(dir, log), 'a');
      const c = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', out, out] });
      children.push(c);
      return c;
    };
    start([path.join(root, 'bin/mintworks.js'), 'chain', 'start', '--port', String(chainPort), '--dir', path.join(dir, 'chain')], {}, 'chain.log');
    await waitFor('the chain', async () => fs.readFileSync(path.join(dir, 'chain.log'), 'utf8').includes('ready at'), 30_000, 50);

    const apiPort = await freePort();
    const base = `http://127.0.0.1:${apiPort}`;
    const common = {
      DATABASE_URL: pgdb.url,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      MASTER_KEY: 'cd'.repeat(32),
      OPERATOR_TOKEN: 'operator-token-for-the-split-test-0123456789',
      CHAIN_RPC_URL: `http://127.0.0.1:${chainPort}`,
      PUBLIC_URL: base,
    };
    const main = path.join(root, 'dist/main.js');
    const single = start([main], { ...common, PORT: String(apiPort) }, 'single.log');
    await waitFor('the first process to answer', async () => (await fetch(`${base}/health`).catch(() => null)) !== null, 60_000, 50);
    const fund = spawnSync(process.execPath, [path.join(root, 'bin/mintworks.js'), 'chain', 'fund'], { env: { ...process.env, ...common }, encoding: 'utf8' });
    assert.equal(fund.status, 0, fund.stderr);
    await waitFor('ready', async () => (await fetch(`${base}/health`)).status === 200, 60_000, 50);
    const demo = demoEnv(dataDir);
    const client = new ApiClient(demo.MW_URL, demo.MW_API_KEY, demo.MW_TOKEN);
    await waitFor('demo collection deployed', async () => (await client.get(`/collection/${demo.MW_COLLECTION}`)).body.data.status === 'deployed', 60_000, 50);
    const user = (await client.post('/user', {})).body.data.uid as string;

    let n = 0;
    const measure = async (label: string, samples = SAMPLES) => {
      const times: number[] = [];
      for (let i = 0; i < samples; i++) {
        const t = performance.now();
        const r = await client.post('/asset', {
          user_uid: user,
          collection_uid: demo.MW_COLLECTION,
          asset_external_id: `lat-${n++}`,
          data: { name: 'Lat', unique_name: false, image_url: 'https://example.com/l.png', store_image_on_ipfs: false },
        });
        assert.equal(r.status, 201, r.raw);
        await waitFor(`asset ${r.body.data.uid} minted`, async () => (await client.get(`/asset/${r.body.data.uid}`)).body.data.is_minted === true, 30_000, 5);
        times.push(performance.now() - t);
      }
      const p50 = median(times);
      process.stdout.write(`# ${label}: POST -> minted p50 ${p50.toFixed(0)} ms (${samples} assets, one at a time)\n`);
      return p50;
    };
    await measure('warm-up, one process', 8);
    const one = await measure('one process');
    await stop(single);

    const api = start([main], { ...common, PORT: String(apiPort), WORKERS: 'false' }, 'api.log');
    start([main], { ...common, API: 'false', DEMO_APP: 'false' }, 'worker.log');
    await waitFor('the API process ready', async () => (await fetch(`${base}/health`).catch(() => null))?.status === 200, 60_000, 50);
    await measure('warm-up, split', 8);
    const split = await measure('API and worker processes, woken by PostgreSQL');

    // The same split with the wake-ups' triggers dropped: the worker finds new jobs at its poll.
    const db = new pg.Client({ connectionString: pgdb.url });
    await db.connect();
    await db.query('drop trigger jobs_inserted_wake on jobs');
    await db.end();
    const polled = await measure('API and worker processes, poll only (triggers dropped)');
    await stop(api);

    process.stdout.write(`# split / one process: ${(split / one).toFixed(2)} with wake-ups, ${(polled / one).toFixed(2)} polling\n`);
    assert.ok(
      split - one <= (polled - one) / 2,
      `p50: one process ${one.toFixed(0)} ms, split ${split.toFixed(0)} ms with wake-ups, ${polled.toFixed(0)} ms polling`,
    );
  });
});
