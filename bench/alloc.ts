// What the API's thread allocates per request, and where: V8's sampling heap profiler, with the objects
// garbage collections have already freed counted too (a request's garbage is what the collector pays
// for: its scavenges, and the helper threads that run them, are a large part of a create's CPU). The
// service runs as in `npm start` with its inspector on a free local port; this process asks it for
// the profile over the DevTools protocol while autocannon drives the route, then prints KB per request
// and the allocating functions (the innermost frames of the service's own code and of each package),
// beside what a bare Fastify route answering the same JSON allocates, sampled the same way.
//   node --import tsx bench/alloc.ts   (BENCH_DB=sqlite|postgres, BENCH_SECONDS=8, ALLOC_ROUTE=post|get,
//                                       CPU_WORKERS=false: the API alone, ALLOC_TOP=30, ALLOC_STACKS=4:
//                                       also by call path, that many frames deep, ALLOC_SURVIVORS=1:
//                                       only what outlived a scavenge, the part that costs the
//                                       collector most: a bare route's requests leave next to none)
// Only the main thread: the creates' and workers' threads are inspector targets of their own.
import { type ChildProcess, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/helpers/env.js';
import { benchSubjects, dbsFromArgs, emit, load, startBare, startService, type LoadResult } from './lib.js';

// Node 20 has a WebSocket client only behind a flag: run again with it.
if (typeof (globalThis as { WebSocket?: unknown }).WebSocket === 'undefined') {
  const r = spawnSync(process.execPath, ['--experimental-websocket', '--no-warnings', '--import', 'tsx', fileURLToPath(import.meta.url)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

// The service from dist/'s files rather than its bundle, so that frames name their files and packages.
process.env.MINTWORKS_FROM_TREE ??= '1';
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const route = process.env.ALLOC_ROUTE ?? 'post';
const top = Number(process.env.ALLOC_TOP ?? 30);
const depth = Number(process.env.ALLOC_STACKS ?? 0);
const survivors = process.env.ALLOC_SURVIVORS === '1';
/** Bytes between samples: small enough for a few thousand samples a second under load. */
const SAMPLING_INTERVAL = 8192;

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}

/** A DevTools protocol session over the inspector's WebSocket. */
async function inspect(port: number) {
  const [target] = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let next = 0;
  const waiting = new Map<number, (m: { result?: unknown; error?: { message: string } }) => void>();
  ws.onmessage = (e) => {
    const m = JSON.parse(String(e.data)) as { id?: number; result?: unknown; error?: { message: string } };
    if (m.id !== undefined) waiting.get(m.id)?.(m);
  };
  const call = <T>(method: string, params: object = {}) =>
    new Promise<T>((resolve, reject) => {
      const id = ++next;
      waiting.set(id, (m) => (m.error ? reject(new Error(`${method}: ${m.error.message}`)) : resolve(m.result as T)));
      ws.send(JSON.stringify({ id, method, params }));
    });
  return { call, close: () => ws.close() };
}

const shortUrl = (url: string) =>
  url
    .replace(/^.*\/node_modules\//, 'nm:')
    .replace(/^.*\/dist\//, 'dist/')
    .replace(/^file:\/\//, '');
/** The package (nm:name) or the service's file of a frame; node's own and V8's as they come. */
const ownerOf = (url: string) => {
  const s = shortUrl(url);
  if (s.startsWith('nm:'))
    return s
      .split('/')
      .slice(0, s.startsWith('nm:@') ? 2 : 1)
      .join('/');
  return s || '(V8 or native)';
};

const frameOf = (n: SamplingNode) => `${n.callFrame.functionName || '(anonymous)'} ${shortUrl(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

/**
 * Bytes sampled by the allocating frame (`self`), by its package or file (`owner`), and by the frame
 * with its `depth - 1` callers (`paths`, ALLOC_STACKS=<depth>).
 */
function summarize(head: SamplingNode, depth: number) {
  const self = new Map<string, number>();
  const owner = new Map<string, number>();
  const paths = new Map<string, number>();
  let total = 0;
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  const walk = (n: SamplingNode, callers: string[]) => {
    const frame = frameOf(n);
    if (n.selfSize) {
      add(self, frame, n.selfSize);
      add(owner, ownerOf(n.callFrame.url), n.selfSize);
      if (depth > 1) add(paths, [frame, ...callers.slice(0, depth - 1)].join(' < '), n.selfSize);
      total += n.selfSize;
    }
    for (const c of n.children) walk(c, [frame, ...callers]);
  };
  walk(head, []);
  return { self, owner, paths, total };
}

const topOf = (m: Map<string, number>, total: number, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`);

/** Samples what the process behind inspector `port` allocates while `run` drives it. */
async function sampled(port: number, run: () => Promise<LoadResult>) {
  const session = await inspect(port);
  try {
    await session.call('HeapProfiler.enable');
    await session.call('HeapProfiler.startSampling', {
      samplingInterval: SAMPLING_INTERVAL,
      includeObjectsCollectedByMajorGC: true,
      // ALLOC_SURVIVORS=1: what outlives a scavenge (promoted or still held), not what dies young.
      includeObjectsCollectedByMinorGC: !survivors,
    });
    const r = await run();
    const { profile } = await session.call<{ profile: { head: SamplingNode } }>('HeapProfiler.stopSampling');
    return { r, ...summarize(profile.head, depth) };
  } finally {
    session.close();
  }
}

const kbPer = (bytes: number, requests: number) => +(bytes / 1024 / Math.max(1, requests)).toFixed(1);

for (const db of dbsFromArgs()) {
  const port = await freePort();
  process.env.BENCH_NODE_ARGS = `${process.env.BENCH_NODE_ARGS ?? ''} --inspect=127.0.0.1:${port}`;
  const svc = await startService(db);
  let bare: ChildProcess | null = null;
  try {
    const { body, firstUid, asset } = await benchSubjects(svc);
    // The baseline: a bare Fastify route answering the same JSON, sampled the same way (its output,
    // the inspector's banners, dropped).
    const bareInspector = await freePort();
    const started = await startBare(asset, { execArgv: [`--inspect=127.0.0.1:${bareInspector}`], quiet: true });
    bare = started.process;
    const bareBase = started.base;
    const headers = { 'content-type': 'application/json', 'x-api-key': svc.apiKey, authorization: `Bearer ${svc.token}` };
    const run = (base: string, secs: number) => () =>
      route === 'get'
        ? load({ url: `${base}/v1/asset/${firstUid}`, headers, seconds: secs })
        : load({ url: `${base}/v1/asset`, method: 'POST', headers, body: JSON.stringify(body), seconds: secs });
    // Warm-up: the code is optimised before it is sampled.
    await run(bareBase, 2)();
    await run(svc.base, 2)();
    const b = await sampled(bareInspector, run(bareBase, seconds));
    const s = await sampled(port, run(svc.base, seconds));
    console.log(
      `== ${db} ${route}: ${kbPer(s.total, s.r.total)} KB ${survivors ? 'outlived a scavenge' : 'sampled'} per request (${s.r.total} requests); bare Fastify ${kbPer(b.total, b.r.total)} KB`,
    );
    console.log('-- by allocating function');
    for (const line of topOf(s.self, s.total, top)) console.log(line);
    console.log('-- by package or file');
    for (const line of topOf(s.owner, s.total, Math.min(top, 20))) console.log(line);
    if (depth > 1) {
      console.log(`-- by allocating function and its ${depth - 1} callers`);
      for (const line of topOf(s.paths, s.total, top)) console.log(line);
    }
    emit({
      bench: 'alloc',
      db,
      route,
      ...(survivors ? { survivors: true } : {}),
      requests: s.r.total,
      rps: s.r.rps,
      kb_per_request: kbPer(s.total, s.r.total),
      bare_kb_per_request: kbPer(b.total, b.r.total),
    });
  } finally {
    bare?.kill();
    await svc.stop();
  }
}
