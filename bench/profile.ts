// CPU profile of the service under POST /v1/asset load: runs `node --cpu-prof dist/main.js`, drives it
// with autocannon, stops it, and prints the functions with the most self time (and by file).
// The .cpuprofile files stay in DATA_DIR/profile for Chrome DevTools (BENCH_KEEP_DATA=1 keeps them).
//   node --import tsx bench/profile.ts   (BENCH_DB=sqlite|postgres, BENCH_SECONDS=10, PROFILE_ROUTE=post|get,
//                                         PROFILE_ENV='{"WORKERS":"false"}' for extra service settings,
//                                         PROFILE_SETTLE_MS=5000 between the start and the load)
// The summary counts the samples taken during the load alone: the threads' start-up (modules loaded,
// keys opened, a workers' thread still starting while the load begins) is not what a profile of a
// route is for, and it had made a third of the workers' thread's time under load. The samples' clock
// is V8's, CLOCK_MONOTONIC on Linux, the same as process.hrtime's in this process.
import fs from 'node:fs';
import path from 'node:path';
import { ApiClient } from '../test/helpers/env.js';
import { benchAssetBody, dbsFromArgs, launchService, load, prepareServiceEnv, readDemo, waitDeployed } from './lib.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const route = process.env.PROFILE_ROUTE ?? 'post';
const extra = JSON.parse(process.env.PROFILE_ENV ?? '{}') as Record<string, string>;
const settleMs = Number(process.env.PROFILE_SETTLE_MS ?? 5000);
/** Now on the profiles' clock (µs). */
const profileClockUs = () => Number(process.hrtime.bigint() / 1000n);

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}
/** From, to: on the profiles' clock (µs). */
type Window = [number, number];

// `node --import tsx bench/profile.ts <file.cpuprofile>…` only summarises profiles taken elsewhere (e.g.
// BENCH_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/p' with another bench).
const files = process.argv.slice(2);
for (const f of files) summarize(path.basename(f), JSON.parse(fs.readFileSync(f, 'utf8')) as Profile);

for (const db of files.length ? [] : dbsFromArgs()) {
  const profDir = `/tmp/mintworks-profile-${process.pid}-${db}`;
  fs.mkdirSync(profDir, { recursive: true });
  // First start: the Demo collection deploys and a user gets a wallet. The profiled start follows with
  // PROFILE_ENV (so WORKERS=false profiles the API alone).
  const se = await prepareServiceEnv(db);
  let proc = await launchService(se.env, { logName: 'setup.log' });
  const demo = readDemo(se.dataDir);
  const api = new ApiClient(demo.url, demo.apiKey, demo.token);
  await waitDeployed(api, demo.collection);
  const user = (await api.post('/user', {})).body.data.uid as string;
  await api.get(`/deposit?user_uid=${user}&collection_uid=${demo.collection}`);
  await proc.stop();
  process.env.BENCH_NODE_ARGS = `--cpu-prof --cpu-prof-dir=${profDir}`;
  // The compiled tree, not the bundle (src/main.ts): the summary attributes time by file and package.
  proc = await launchService({ ...se.env, ...extra, MINTWORKS_FROM_TREE: '1' });
  delete process.env.BENCH_NODE_ARGS;
  const svc = { base: proc.base, api, apiKey: demo.apiKey, token: demo.token, collection: demo.collection };
  let window: Window | undefined;
  try {
    await new Promise((r) => setTimeout(r, settleMs));
    const body = benchAssetBody(user, svc.collection);
    const first = (await svc.api.post('/asset', { ...body, asset_external_id: 'first' })).body.data.uid as string;
    const headers = { 'content-type': 'application/json', 'x-api-key': svc.apiKey, authorization: `Bearer ${svc.token}` };
    const from = profileClockUs();
    const r =
      route === 'get'
        ? await load({ url: `${svc.base}/v1/asset/${first}`, headers, seconds })
        : await load({ url: `${svc.base}/v1/asset`, method: 'POST', headers, body: JSON.stringify(body), seconds });
    window = [from, profileClockUs()];
    console.log(JSON.stringify({ db, route, ...r }));
  } finally {
    await proc.stop();
    await se.dispose();
  }
  for (const f of fs.readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'))) {
    const p = JSON.parse(fs.readFileSync(path.join(profDir, f), 'utf8')) as Profile;
    summarize(f, p, window);
  }
}

/** `window`: only the samples taken within it (the load); without, all of them. */
function summarize(name: string, p: Profile, window?: Window): void {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let at = p.startTime;
  p.samples.forEach((id, i) => {
    at += p.timeDeltas[i] ?? 0;
    if (window && (at < window[0] || at > window[1])) return;
    self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  if (total < 1e6) return; // threads that barely ran
  const fnTotals = new Map<string, number>();
  const fileTotals = new Map<string, number>();
  for (const [id, t] of self) {
    const n = byId.get(id)!;
    const file = n.callFrame.url
      .replace(/^file:\/\//, '')
      .replace(/.*node_modules\//, 'nm:')
      .replace(/.*\/dist\//, 'dist/');
    const key = `${n.callFrame.functionName || '(anon)'} ${file}:${n.callFrame.lineNumber + 1}`;
    fnTotals.set(key, (fnTotals.get(key) ?? 0) + t);
    const pkg = file.startsWith('nm:')
      ? file
          .split('/')
          .slice(0, file.startsWith('nm:@') ? 2 : 1)
          .join('/')
      : file || n.callFrame.functionName;
    fileTotals.set(pkg, (fileTotals.get(pkg) ?? 0) + t);
  }
  const top = (m: Map<string, number>, k: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, k)
      .map(([key, t]) => `${((100 * t) / total).toFixed(1).padStart(5)}%  ${key}`)
      .join('\n');
  console.log(
    `\n== ${name}: ${(total / 1e6).toFixed(1)} s sampled${window ? ' during the load' : ''}\n-- by function\n${top(fnTotals, 40)}\n-- by file\n${top(fileTotals, 25)}`,
  );
}
