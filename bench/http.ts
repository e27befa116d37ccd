// POST /v1/asset and GET /v1/asset/<uid> against a bare Fastify route answering the same JSON, on the
// same box in the same run (autocannon, 64 connections). The service runs as `node dist/main.js` with
// its workers on, as in production: accepted assets are minted meanwhile; then POST again with the
// workers off (the API alone, restarted on the same data). One JSON line per database.
// On PostgreSQL it also measures two API processes (API=true WORKERS=false beside the first) sharing
// the load.
//   node --import tsx bench/http.ts            (BENCH_DB=sqlite|postgres for one; BENCH_SECONDS=10)
// GET runs the bare route and the service in turns, BENCH_GET_ROUNDS (4) of each, BENCH_SECONDS in all per
// side; its ratio is over all of them, and round_ratios gives each turn's.
// BENCH_BURST_ASSETS=80000 makes the service's POST burst (workers on) that many creates however long
// they take (BENCH_BURST_SECONDS: that many seconds; default BENCH_SECONDS): the peak memory is measured
// through a burst of ~80,000 creates and its drain, and a slow or shared machine needs longer than 10 s
// to send that many. The rates stay comparable: req/s are averages.
// Each POST measure (workers on, workers off) follows 2 s of creates that warm the fresh process up, as
// its GETs and the bare route are warmed; what those first seconds answered is reported as `cold`, and
// their creates are in the drain and its peak memory with the burst's.
import { freePort, waitFor } from '../test/helpers/env.js';
import {
  alternately,
  benchAssetBody,
  dbsFromArgs,
  emit,
  load,
  openDbReader,
  serviceRssMb,
  spawnMain,
  startBare,
  startService,
  type LoadResult,
} from './lib.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const burstSeconds = Number(process.env.BENCH_BURST_SECONDS ?? seconds);
const burstAssets = Number(process.env.BENCH_BURST_ASSETS ?? 0);
const connections = 64;
const getRounds = Number(process.env.BENCH_GET_ROUNDS ?? 4);
/** How long a fresh process's creates run before they are measured (its warm-up). */
const WARM_UP_SECONDS = 2;
const coldOf = (r: LoadResult) => ({ seconds: WARM_UP_SECONDS, rps: r.rps, p50: r.p50, p99: r.p99, total: r.total });

for (const db of dbsFromArgs()) {
  const svc = await startService(db);
  try {
    const users = await Promise.all(Array.from({ length: 4 }, () => svc.api.post('/user', {}).then((r) => r.body.data.uid as string)));
    // Wallets first, so the burst measures asset creation, not wallet creation.
    for (const u of users) await svc.api.get(`/deposit?user_uid=${u}&collection_uid=${svc.collection}`);
    const first = await svc.api.post('/asset', benchAssetBody(users[0], svc.collection, 'first'));
    const sample = await svc.api.get(`/asset/${first.body.data.uid}`);

    const { base: bareBase, process: bare } = await startBare(sample.body.data);
    const headers = { 'content-type': 'application/json', 'x-api-key': svc.apiKey, authorization: `Bearer ${svc.token}` };
    const postBody = JSON.stringify(benchAssetBody(users[1], svc.collection, '[<id>]'));
    const run = (base: string, method: 'GET' | 'POST', p: string, s = seconds, amount = 0) =>
      load({ url: `${base}${p}`, method, headers, body: method === 'POST' ? postBody : undefined, connections, seconds: s, amount });

    await run(bareBase, 'POST', '/v1/asset'); // warm-up of the load generator and the bare server
    // Reads first: after the POST burst the workers mint its tens of thousands of assets for a while,
    // and a read measured then would measure that backlog's minting too.
    // The bare route and the service in turns (BENCH_GET_ROUNDS of each, BENCH_SECONDS in all per side): on
    // these machines the bare route's own rate swung from 11,800 to 24,500 a second from one run to the next.
    // Both warmed up first (the JIT, the service's cache): in turns without it the service's ratio rose
    // from one turn to the next, 0.675, 0.728, 0.520, 0.816 in one run.
    for (const base of [bareBase, svc.base]) await run(base, 'GET', `/v1/asset/${first.body.data.uid}`, 2);
    const gets = await alternately(getRounds, seconds, (which, s) => run(which === 'a' ? bareBase : svc.base, 'GET', `/v1/asset/${first.body.data.uid}`, s));
    const [bareGet, svcGet] = [gets.a, gets.b];
    const barePost = await run(bareBase, 'POST', '/v1/asset');
    // The service's creates warmed up too, as its reads were and as the bare route was by its run above:
    // a fresh process's first second or two of creates run cold code (the JIT's compiles share the cores)
    // at about a third of its rate, and that start made most of a 10 s burst's p99. What the cold start
    // answered is reported apart (`cold`).
    const svcPostCold = await run(svc.base, 'POST', '/v1/asset', WARM_UP_SECONDS);
    const heaps = sampleThreadHeaps(svc.base);
    const burstStart = performance.now();
    const svcPost = await run(svc.base, 'POST', '/v1/asset', burstSeconds, burstAssets);
    const burstTook = +((performance.now() - burstStart) / 1000).toFixed(1);
    bare.kill();

    let twoApi: { post: LoadResult; ratio_vs_one: number } | undefined;
    if (db === 'postgres') {
      // A second API-only process on the same database and chain: two generators, 32 connections each.
      const env2 = { ...svc.env, PORT: String(await freePort()), WORKERS: 'false', DEMO_APP: 'false', CHAIN_RPC_URL: `http://127.0.0.1:${svc.env.ANVIL_PORT}` };
      const second = spawnMain(env2, 'service2.log');
      const base2 = `http://127.0.0.1:${env2.PORT}`;
      try {
        await waitFor('second API process', async () => (await fetch(`${base2}/health`).catch(() => null))?.status === 200, 60_000, 200);
        const half = (base: string) => load({ url: `${base}/v1/asset`, method: 'POST', headers, body: postBody, connections: connections / 2, seconds });
        const [a, b] = await Promise.all([half(svc.base), half(base2)]);
        const post = {
          rps: a.rps + b.rps,
          p50: Math.max(a.p50, b.p50),
          p99: Math.max(a.p99, b.p99),
          non2xx: a.non2xx + b.non2xx,
          errors: a.errors + b.errors,
          total: a.total + b.total,
        };
        twoApi = { post, ratio_vs_one: +(post.rps / svcPost.rps).toFixed(2) };
      } finally {
        second.kill('SIGTERM');
        await new Promise((r) => second.once('exit', r));
      }
    }

    // Peak RSS through the burst and through the drain that follows: the workers minting every accepted
    // asset is when the backlog is largest in the service's hands, so the peak is read once it is done.
    const burstRss = Math.max(...svc.pids().map(serviceRssMb));
    const drain = await waitForDrain(svc);
    const peakRss = Math.max(...svc.pids().map(serviceRssMb));
    const peakHeaps = heaps.stop();

    // The API alone: the same database and backlog, the workers off, so nothing mints beside the burst.
    // What accepting costs by itself; the run above is what a studio sees with minting going on.
    await svc.relaunch({ WORKERS: 'false' });
    const apiOnlyCold = await run(svc.base, 'POST', '/v1/asset', WARM_UP_SECONDS);
    const apiOnlyPost = await run(svc.base, 'POST', '/v1/asset');

    emit({
      bench: 'http',
      db,
      connections,
      seconds,
      burst_seconds: burstTook,
      post_asset: { ...svcPost, bare_rps: barePost.rps, bare_p99: barePost.p99, ratio: +(svcPost.rps / barePost.rps).toFixed(3), cold: coldOf(svcPostCold) },
      get_asset: { ...svcGet, bare_rps: bareGet.rps, bare_p99: bareGet.p99, ratio: +(svcGet.rps / bareGet.rps).toFixed(3), round_ratios: gets.ratios },
      post_asset_workers_off: { ...apiOnlyPost, ratio: +(apiOnlyPost.rps / barePost.rps).toFixed(3), cold: coldOf(apiOnlyCold) },
      ...(twoApi ? { post_asset_two_api_processes: twoApi } : {}),
      accepted: drain.accepted,
      drain_seconds: drain.seconds,
      peak_rss_mb_burst: burstRss,
      peak_rss_mb: peakRss,
      peak_heap_mb: peakHeaps,
    });
  } finally {
    await svc.stop();
  }
}

/** Waits until every asset of the Demo collection is minted; how many there are and how long it took. */
async function waitForDrain(svc: Awaited<ReturnType<typeof startService>>): Promise<{ accepted: number; seconds: number }> {
  const reader = await openDbReader({ db: svc.env.DATABASE_URL ? 'postgres' : 'sqlite', dataDir: svc.dataDir, env: svc.env });
  const t0 = performance.now();
  try {
    const counts = async () => {
      const rows = await reader.query<{ mint_status: string; n: unknown }>(
        'select mint_status, count(*) as n from assets where collection_uid = $1 group by mint_status',
        [svc.collection],
      );
      const c = Object.fromEntries(rows.map((x) => [x.mint_status, Number(x.n)]));
      if (c.failed) throw new Error(`${c.failed} assets failed to mint`);
      return { pending: c.pending ?? 0, all: (c.pending ?? 0) + (c.minted ?? 0) };
    };
    // A slow poll: the count only spares the database.
    const done = await waitFor(
      'the burst minted',
      async () => {
        const c = await counts();
        return c.pending === 0 ? c : null;
      },
      Number(process.env.BENCH_DRAIN_TIMEOUT_S ?? 900) * 1000,
      1000,
    );
    return { accepted: done.all, seconds: +((performance.now() - t0) / 1000).toFixed(1) };
  } finally {
    await reader.close();
  }
}

/**
 * Each thread's largest heap (V8's total, MB) through the burst and its drain, from /metrics once a
 * second: where the peak's memory is.
 */
function sampleThreadHeaps(base: string): { stop(): Record<string, number> } {
  const peak: Record<string, number> = {};
  const sample = async () => {
    const text = await fetch(`${base}/metrics`)
      .then((r) => r.text())
      .catch(() => '');
    for (const m of text.matchAll(/^mintworks_thread_heap_bytes\{thread="(\w+)",space="total"\} (\d+)/gm)) {
      peak[m[1]] = Math.max(peak[m[1]] ?? 0, Math.round(Number(m[2]) / 1048576));
    }
  };
  const timer = setInterval(() => void sample(), 1000);
  return {
    stop() {
      clearInterval(timer);
      return peak;
    },
  };
}
