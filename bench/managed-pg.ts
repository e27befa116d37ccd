// POST -> minted through a transaction pooler, against a direct connection, in the same run on the same
// database and chain: an API process and a worker process apart (PostgreSQL wakes the worker when work
// is inserted), assets created one at a time, so what is measured is the wake-up and the pipeline, not a
// backlog. Three ways to reach the database, in turn, twice:
//   direct   DATABASE_URL to the server (the baseline)
//   pooled   DATABASE_URL to PgBouncer in transaction mode, DATABASE_DIRECT_URL to the server (LISTEN there)
//   polling  DATABASE_URL to PgBouncer in transaction mode alone (no LISTEN: the worker polls)
// Prints one JSON line: each one's p50 and its ratio to the direct one's (the target: pooled within
// 1.5x). Run on its own: `npm run build && node --import tsx bench/managed-pg.ts` (BENCH_SAMPLES=25).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ApiClient, demoEnv, freePort, freshPostgres, tempDir, waitFor } from '../test/helpers/env.js';
import { startPgBouncer } from '../test/helpers/pgbouncer.js';
import { root } from './lib.js';

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 25);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const children: ChildProcess[] = [];
const stop = async (c: ChildProcess) => {
  if (c.exitCode !== null || c.signalCode !== null) return;
  const exited = new Promise((r) => c.once('exit', r));
  c.kill('SIGTERM');
  await exited;
};

const pgdb = await freshPostgres();
const bouncer = await startPgBouncer({ server: { host: '127.0.0.1', port: 5432 }, poolSize: 20 });
const dir = tempDir('mintworks-bench-managed-');
try {
  const dataDir = path.join(dir, 'data');
  const start = (args: string[], env: Record<string, string>, log: string) => {
    const out = fs.openSync(path.join(dir, log), 'a');
    const c = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', out, out] });
    children.push(c);
    return c;
  };
  const chainPort = await freePort();
  start([path.join(root, 'bin/mintworks.js'), 'chain', 'start', '--port', String(chainPort), '--dir', path.join(dir, 'chain')], {}, 'chain.log');
  await waitFor('the chain', async () => fs.readFileSync(path.join(dir, 'chain.log'), 'utf8').includes('ready at'), 30_000, 50);
  const apiPort = await freePort();
  const base = `http://127.0.0.1:${apiPort}`;
  const name = new URL(pgdb.url).pathname.slice(1);
  const ways: Record<string, Record<string, string>> = {
    direct: { DATABASE_URL: pgdb.url },
    pooled: { DATABASE_URL: bouncer.urlFor(name), DATABASE_POOL_MODE: 'transaction', DATABASE_DIRECT_URL: pgdb.url },
    polling: { DATABASE_URL: bouncer.urlFor(name), DATABASE_POOL_MODE: 'transaction' },
  };
  const common = {
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    MASTER_KEY: 'cd'.repeat(32),
    OPERATOR_TOKEN: 'operator-token-for-the-managed-bench-0123',
    CHAIN_RPC_URL: `http://127.0.0.1:${chainPort}`,
    PUBLIC_URL: base,
  };
  const main = path.join(root, 'dist/main.js');
  let client: ApiClient | null = null;
  let user = '';
  let collection = '';
  let n = 0;
  const times: Record<string, number[]> = { direct: [], pooled: [], polling: [] };
  for (const round of [1, 2]) {
    for (const [way, db] of Object.entries(ways)) {
      const api = start([main], { ...common, ...db, PORT: String(apiPort), WORKERS: 'false' }, `${way}-api.log`);
      const worker = start([main], { ...common, ...db, API: 'false', DEMO_APP: 'false' }, `${way}-worker.log`);
      await waitFor('the API process answering', async () => (await fetch(`${base}/health`).catch(() => null)) !== null, 90_000, 50);
      if (!client) {
        const fund = spawnSync(process.execPath, [path.join(root, 'bin/mintworks.js'), 'chain', 'fund'], {
          env: { ...process.env, ...common, ...db },
          encoding: 'utf8',
        });
        if (fund.status !== 0) throw new Error(fund.stderr);
      }
      await waitFor('ready', async () => (await fetch(`${base}/health`)).status === 200, 90_000, 50);
      if (!client) {
        const demo = demoEnv(dataDir);
        client = new ApiClient(demo.MW_URL, demo.MW_API_KEY, demo.MW_TOKEN);
        collection = demo.MW_COLLECTION;
        await waitFor('demo collection deployed', async () => (await client!.get(`/collection/${collection}`)).body.data.status === 'deployed', 60_000, 50);
        user = (await client.post('/user', {})).body.data.uid as string;
      }
      for (let i = 0; i < SAMPLES + 3; i++) {
        const t = performance.now();
        const r = await client.post('/asset', {
          user_uid: user,
          collection_uid: collection,
          asset_external_id: `managed-bench-${n++}`,
          data: { name: 'Lat', unique_name: false, image_url: 'https://example.com/l.png', store_image_on_ipfs: false },
        });
        if (r.status !== 201) throw new Error(`${way}: POST /asset answered ${r.status}: ${r.raw}`);
        await waitFor(`asset ${r.body.data.uid} minted`, async () => (await client!.get(`/asset/${r.body.data.uid}`)).body.data.is_minted === true, 30_000, 5);
        if (i >= 3) times[way].push(performance.now() - t); // the first three warm the processes up
      }
      await stop(api);
      await stop(worker);
      process.stderr.write(`round ${round}, ${way}: p50 so far ${median(times[way]).toFixed(0)} ms\n`);
    }
  }
  const p50 = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, Math.round(median(v))]));
  console.log(
    JSON.stringify({
      bench: 'managed_pg',
      samples: SAMPLES * 2,
      post_to_minted_p50_ms: p50,
      pooled_ratio: Number((p50.pooled / p50.direct).toFixed(2)),
      polling_ratio: Number((p50.polling / p50.direct).toFixed(2)),
    }),
  );
} finally {
  for (const c of children.reverse()) await stop(c);
  bouncer.stop();
  await pgdb.drop();
  fs.rmSync(dir, { recursive: true, force: true });
}
