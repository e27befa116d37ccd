// CPU time per request, by thread (and of the PostgreSQL server's processes on PostgreSQL), for
// POST /v1/asset and GET /v1/asset/<uid>, against a bare Fastify route answering the same JSON.
// Wall-clock rates swing with whatever else a shared machine runs; CPU time spent per request swings
// less (on a noisy machine still by a quarter: bench/alloc.ts's KB per request stays put), so this is
// the measure to optimise with while others work (the ratio of CPU per request,
// bare ÷ service, bounds the req/s ratio `bench/http.ts` can reach). `machine_busy` and `load_us` say
// whether the machine's cores were the limit (the load generator runs on the same cores).
//   node --import tsx bench/cpu.ts      (BENCH_DB=sqlite|postgres, BENCH_SECONDS=8, CPU_WORKERS=false,
//                                        CPU_ROUTES=post, CPU_BY_TID=1: each thread of the service apart,
//                                        CPU_ENV='{"CREATES_THREAD":"false"}': the service's own settings)
import fs from 'node:fs';
import { benchSubjects, dbsFromArgs, emit, ioOf, load, postgresServerMs, startBare, startService } from './lib.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const connections = 64;
/** CPU_ROUTES=post measures POST alone (a GC trace of the service then covers the POST burst only). */
const routes = (process.env.CPU_ROUTES ?? 'post,get').split(',');
const TICK_MS = 1000 / 100; // USER_HZ

/** CPU ms so far of every thread of `pid` (and of its child processes), keyed by a readable name. */
function cpuByThread(pid: number, withPostgres = false): Map<string, number> {
  const out = new Map<string, number>();
  const add = (k: string, ms: number) => out.set(k, (out.get(k) ?? 0) + ms);
  const walk = (p: number, label: string) => {
    let tids: string[] = [];
    try {
      tids = fs.readdirSync(`/proc/${p}/task`);
    } catch {
      return;
    }
    for (const tid of tids) {
      try {
        const stat = fs.readFileSync(`/proc/${p}/task/${tid}/stat`, 'utf8');
        const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const ms = (Number(f[11]) + Number(f[12])) * TICK_MS;
        add(`${label}:${tid === String(p) ? 'main' : process.env.CPU_BY_TID ? `${comm}#${tid}` : comm}`, ms);
      } catch {
        /* the thread ended */
      }
    }
    try {
      for (const c of fs.readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)) {
        const cmd = fs.readFileSync(`/proc/${c}/cmdline`, 'utf8');
        walk(Number(c), cmd.includes('anvil') ? 'anvil' : 'child');
      }
    } catch {
      /* no children */
    }
  };
  walk(pid, 'svc');
  if (withPostgres) add('postgres', postgresServerMs());
  return out;
}

/** The service's /metrics counters of where creates waited (`mintworks_creates_wait_seconds_*{stage}`). */
async function createsWaits(base: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return new Map([...text.matchAll(/^mintworks_creates_wait_seconds_(sum|count)\{stage="(\w+)"\} (\S+)$/gm)].map((m) => [`${m[2]}_${m[1]}`, Number(m[3])]));
}

/** Mean ms per create at each stage between two readings of createsWaits. */
function meanWaits(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const delta = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
  return Object.fromEntries(
    ['written', 'flushed'].map((stage) => [stage, +((delta(`${stage}_sum`) * 1000) / Math.max(1, delta(`${stage}_count`))).toFixed(2)]),
  );
}

/** Jiffies so far of all the machine's cores: busy and in all (idle and I/O wait count as not busy). */
function machineTicks(): { busy: number; all: number } {
  const [, ...f] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  const n = f.map(Number);
  const all = n.slice(0, 8).reduce((a, b) => a + b, 0); // user nice system idle iowait irq softirq steal
  return { busy: all - n[3] - n[4], all };
}

async function measure(pid: number, run: () => Promise<{ total: number; rps: number; p99: number }>, withPostgres = false) {
  const before = cpuByThread(pid, withPostgres);
  const ioBefore = ioOf(pid);
  const machineBefore = machineTicks();
  const loadBefore = process.cpuUsage();
  const r = await run();
  const load = process.cpuUsage(loadBefore);
  const machineAfter = machineTicks();
  const after = cpuByThread(pid, withPostgres);
  const ioAfter = ioOf(pid);
  const perReq: Record<string, number> = {};
  let total = 0;
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d <= 0) continue;
    perReq[k] = (perReq[k] ?? 0) + d;
    total += d;
  }
  const us = (ms: number) => Math.round((ms * 1000) / Math.max(1, r.total));
  return {
    rps: r.rps,
    p99: r.p99,
    total_us: us(total),
    // KB per request written to disk by the service (SQLite: the WAL and the checkpoints' copies), and by its write calls (sockets included).
    disk_kb: +((ioAfter.disk - ioBefore.disk) / 1024 / Math.max(1, r.total)).toFixed(2),
    written_kb: +((ioAfter.calls - ioBefore.calls) / 1024 / Math.max(1, r.total)).toFixed(2),
    // The share of all the machine's cores busy during the run (whatever ran), and the load generator's
    // own CPU per request (autocannon, in this process): near 1, the rate is bounded by CPU, the
    // service's and the generator's together, not by a wait.
    machine_busy: +((machineAfter.busy - machineBefore.busy) / Math.max(1, machineAfter.all - machineBefore.all)).toFixed(3),
    load_us: Math.round((load.user + load.system) / Math.max(1, r.total)),
    by_thread_us: Object.fromEntries(
      Object.entries(perReq)
        .filter(([, v]) => us(v) > 0)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => [k, us(v)]),
    ),
  };
}

for (const db of dbsFromArgs()) {
  const svc = await startService(db, JSON.parse(process.env.CPU_ENV ?? '{}'));
  try {
    const { body, firstUid, asset } = await benchSubjects(svc);
    const { base: bareBase, process: bare } = await startBare(asset);
    const headers = { 'content-type': 'application/json', 'x-api-key': svc.apiKey, authorization: `Bearer ${svc.token}` };
    const post = (base: string) => () => load({ url: `${base}/v1/asset`, method: 'POST', headers, body: JSON.stringify(body), connections, seconds });
    const get = (base: string) => () => load({ url: `${base}/v1/asset/${firstUid}`, headers, connections, seconds });
    await post(bareBase)(); // warm-up
    const svcPid = svc.pids()[0];
    const bare_post = await measure(bare.pid!, post(bareBase));
    const waitsBefore = await createsWaits(svc.base);
    const postRes = await measure(svcPid, post(svc.base), db === 'postgres');
    const waitsAfter = await createsWaits(svc.base);
    const res = {
      bare_post,
      post: { ...postRes, waits_ms: meanWaits(waitsBefore, waitsAfter) },
      ...(routes.includes('get') ? { bare_get: await measure(bare.pid!, get(bareBase)), get: await measure(svcPid, get(svc.base), db === 'postgres') } : {}),
    };
    bare.kill();
    emit({
      bench: 'cpu',
      db,
      connections,
      seconds,
      ...res,
      post_cpu_ratio: +(res.bare_post.total_us / res.post.total_us).toFixed(3),
      ...(res.get && res.bare_get ? { get_cpu_ratio: +(res.bare_get.total_us / res.get.total_us).toFixed(3) } : {}),
    });
  } finally {
    await svc.stop();
  }
}
