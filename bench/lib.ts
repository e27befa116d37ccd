// Shared bench plumbing: the service as a real `node dist/main.js` process (its own DATA_DIR, SQLite or
// a fresh PostgreSQL database), the Demo App's credentials, peak RSS from /proc, autocannon runs, and a
// read-only view of the service's database for counting what the workers did.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { ApiClient, freePort, freshPostgres, tempDir, waitFor } from '../test/helpers/env.js';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export type DbKind = 'sqlite' | 'postgres';

// autocannon ships no type declarations; loaded through require with the little of its shape used here,
// so the bench files type-check under --strict without a declaration file.
interface AutocannonOpts {
  url: string;
  method: string;
  headers?: Record<string, string>;
  body?: string;
  idReplacement: boolean;
  connections: number;
  duration: number;
  amount?: number;
}
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: AutocannonOpts) => Promise<AutocannonResult>;

// ------------------------------------------------------------------------------- service processes

/** Where one service installation lives: its DATA_DIR, its database and the env of its processes. */
export interface ServiceEnv {
  db: DbKind;
  dataDir: string;
  env: Record<string, string>;
  /** Drops the PostgreSQL database and removes DATA_DIR (the processes must be stopped first). */
  dispose(): Promise<void>;
}

export async function prepareServiceEnv(db: DbKind, extraEnv: Record<string, string> = {}): Promise<ServiceEnv> {
  const dataDir = tempDir('mintworks-bench-');
  const pgdb = db === 'postgres' ? await freshPostgres() : null;
  const env: Record<string, string> = {
    PORT: String(await freePort()),
    ANVIL_PORT: String(await freePort()),
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn', // info says why a service stopped, but logs every request: for post-mortems only
    RATE_LIMIT: '0', // one API key drives all the load: the per-key limit would cap the bench, not the service
    ...(pgdb ? { DATABASE_URL: pgdb.url } : {}),
    ...extraEnv,
  };
  return {
    db,
    dataDir,
    env,
    async dispose() {
      // BENCH_KEEP_DATA=1 keeps both for a post-mortem (logs are in DATA_DIR/*.log).
      if (process.env.BENCH_KEEP_DATA === '1') return void process.stderr.write(`kept ${dataDir} ${pgdb?.url ?? ''}\n`);
      await pgdb?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** One running `node dist/main.js`. */
export interface ServiceProcess {
  child: ChildProcess;
  pid: number;
  base: string; // http://127.0.0.1:<port>
  /** performance.now() when /health first answered 200. */
  healthyAt: number;
  /** VmHWM of the service: this process plus its worker process (the embedded anvil is not counted). */
  peakRssMb(): number;
  /** SIGTERM and wait for the exit (the service stops its embedded chain, which saves its state). */
  stop(): Promise<void>;
}

/** Spawns the service with `env` and waits until /health answers 200; fails early if it exits first. */
export async function launchService(
  env: Record<string, string>,
  opts: { logName?: string; timeoutMs?: number; pollMs?: number; answering?: boolean } = {},
): Promise<ServiceProcess> {
  const logName = opts.logName ?? 'service.log';
  const child = spawnMain(env, logName);
  const base = `http://127.0.0.1:${env.PORT}`;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  try {
    await waitFor(
      'service health',
      async () => {
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`the service exited (${child.exitCode ?? child.signalCode}); ${logTail(env.DATA_DIR, logName)}`);
        const status = (await fetch(`${base}/health`).catch(() => null))?.status;
        // `answering`: up is enough (an external chain's accounts are funded by the caller once it answers).
        return opts.answering ? status !== undefined : status === 200;
      },
      opts.timeoutMs ?? 120_000,
      opts.pollMs ?? 200,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { child, pid: child.pid!, base, healthyAt: performance.now(), peakRssMb: () => serviceRssMb(child.pid!), stop };
}

function logTail(dataDir: string, logName: string): string {
  try {
    return `log tail: ${fs.readFileSync(path.join(dataDir, logName), 'utf8').slice(-2000)}`;
  } catch {
    return 'no log';
  }
}

export interface DemoCredentials {
  url: string;
  app: string;
  apiKey: string;
  token: string;
  collection: string;
}

/** The Demo App the first start writes to DATA_DIR/demo.env. */
export function readDemo(dataDir: string): DemoCredentials {
  const demo = Object.fromEntries(
    fs
      .readFileSync(path.join(dataDir, 'demo.env'), 'utf8')
      .split('\n')
      .filter((l) => /^MW_\w+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  return { url: demo.MW_URL, app: demo.MW_APP, apiKey: demo.MW_API_KEY, token: demo.MW_TOKEN, collection: demo.MW_COLLECTION };
}

export async function waitDeployed(api: ApiClient, collection: string, timeoutMs = 60_000): Promise<void> {
  await waitFor('collection deployed', async () => (await api.get(`/collection/${collection}`)).body?.data?.status === 'deployed', timeoutMs, 200);
}

/** Runs `fn(i)` for i in [0, n) with at most `concurrency` in flight. */
export async function inParallel(n: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, concurrency) }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

export interface RunningService {
  base: string; // http://127.0.0.1:<port>
  api: ApiClient; // the Demo App
  apiKey: string;
  token: string;
  collection: string;
  dataDir: string;
  env: Record<string, string>;
  pids(): number[];
  /** Stops the process and starts it again on the same data with `extraEnv` added (e.g. WORKERS=false). */
  relaunch(extraEnv: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
}

/** Starts `node dist/main.js` (API + workers + embedded chain) and waits for the Demo collection. */
export async function startService(db: DbKind, extraEnv: Record<string, string> = {}): Promise<RunningService> {
  const se = await prepareServiceEnv(db, extraEnv);
  let proc: ServiceProcess | null = null;
  try {
    proc = await launchService(se.env);
    const demo = readDemo(se.dataDir);
    const api = new ApiClient(demo.url, demo.apiKey, demo.token);
    await waitDeployed(api, demo.collection);
    let p = proc;
    return {
      base: p.base,
      api,
      apiKey: demo.apiKey,
      token: demo.token,
      collection: demo.collection,
      dataDir: se.dataDir,
      env: se.env,
      pids: () => [p.pid],
      async relaunch(extra) {
        await p.stop();
        p = await launchService({ ...se.env, ...extra }, { logName: 'relaunched.log' });
      },
      async stop() {
        await p.stop();
        await se.dispose();
      },
    };
  } catch (err) {
    await proc?.stop();
    await se.dispose();
    throw err;
  }
}

/**
 * The Demo App's subject of the per-request benches: a user with a wallet (the service restarted
 * without workers once it has one, with CPU_WORKERS=false), the create body (`[<id>]` replaced per
 * request), and a first asset with its JSON (what the bare route answers).
 */
export async function benchSubjects(svc: RunningService) {
  const user = (await svc.api.post('/user', {})).body.data.uid as string;
  await svc.api.get(`/deposit?user_uid=${user}&collection_uid=${svc.collection}`);
  // The API alone: restarted without workers once the collection is deployed and the wallet exists.
  if (process.env.CPU_WORKERS === 'false') await svc.relaunch({ WORKERS: 'false' });
  const body = benchAssetBody(user, svc.collection);
  const first = await svc.api.post('/asset', { ...body, asset_external_id: 'first' });
  const sample = await svc.api.get(`/asset/${first.body.data.uid}`);
  return { body, firstUid: first.body.data.uid as string, asset: sample.body.data as unknown };
}

/**
 * The baseline: a bare Fastify process (bench/bare-server.ts) answering `asset` for GET and POST, as
 * the service's routes would. `execArgv`: node flags of its own; `quiet`: its output dropped.
 */
export async function startBare(asset: unknown, opts: { execArgv?: string[]; quiet?: boolean } = {}): Promise<{ base: string; process: ChildProcess }> {
  const port = await freePort();
  const child = fork(path.join(root, 'bench/bare-server.ts'), [], {
    env: { ...process.env, PORT: String(port), BARE_ASSET_JSON: JSON.stringify(asset) },
    execArgv: ['--import', 'tsx', ...(opts.execArgv ?? [])],
    ...(opts.quiet ? { stdio: ['ignore', 'ignore', 'ignore', 'ipc'] as const } : {}),
  });
  await new Promise((r) => child.once('message', r));
  return { base: `http://127.0.0.1:${port}`, process: child };
}

export function spawnMain(env: Record<string, string>, logName: string): ChildProcess {
  const log = fs.openSync(path.join(env.DATA_DIR, logName), 'a');
  // The environment defaults and node flags of `npm start` (the service runs as it does there), then
  // BENCH_NODE_ARGS: extra node flags for the service (e.g. --cpu-prof, which NODE_OPTIONS refuses).
  const start = startCommand();
  const nodeArgs = [...start.flags, ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)];
  return spawn(process.execPath, [...nodeArgs, path.join(root, 'dist/main.js')], {
    env: { ...start.env, ...process.env, ...env },
    stdio: ['ignore', log, log],
  });
}

/**
 * package.json's `start` script, `[VAR=${VAR:-default} …] exec node <flags> dist/main.js`: the
 * defaults it gives the environment (a variable already set wins, as in the shell) and its node flags.
 */
function startCommand(): { env: Record<string, string>; flags: string[] } {
  const start = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const m = /^((?:\w+=\$\{\w+:-[^}]*\}\s+)*)exec node((?:\s+--\S+)*)\s+dist\/main\.js$/.exec(start.trim());
  if (!m) throw new Error(`package.json start script is not "[VAR=\${VAR:-default} …] exec node [flags] dist/main.js": ${start}`);
  const env = Object.fromEntries([...m[1].matchAll(/(\w+)=\$\{\w+:-([^}]*)\}/g)].map((v) => [v[1], v[2]]));
  return { env, flags: m[2].split(/\s+/).filter(Boolean) };
}

/** Peak resident set size (VmHWM) of one process, in MB; 0 once it is gone. */
export function peakRssMb(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}

/**
 * CPU seconds (user + system) used so far by a service and by the processes it started, the service's
 * own node processes apart from its embedded anvil (Linux, /proc: clock ticks of 1/100 s).
 */
export function serviceCpuSeconds(pid: number): { service: number; chain: number } {
  const ticks = (p: number) => {
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from the 3rd on; utime, stime are the 14th, 15th
      return Number(f[11]) + Number(f[12]);
    } catch {
      return 0;
    }
  };
  const isChain = (p: number) => {
    try {
      return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('anvil');
    } catch {
      return false;
    }
  };
  const children = childPids(pid);
  const service = [pid, ...children.filter((c) => !isChain(c))].reduce((s, p) => s + ticks(p), 0);
  const chain = children.filter(isChain).reduce((s, p) => s + ticks(p), 0);
  return { service: service / 100, chain: chain / 100 };
}

/** Bytes the process has had written so far: `write_bytes` (what reaches the disk: the WAL and its checkpoints) and `wchar` (every write call). */
export function ioOf(pid: number): { disk: number; calls: number } {
  try {
    const io = fs.readFileSync(`/proc/${pid}/io`, 'utf8');
    const field = (k: string) => Number(new RegExp(`^${k}: (\\d+)`, 'm').exec(io)?.[1] ?? 0);
    return { disk: field('write_bytes'), calls: field('wchar') };
  } catch {
    return { disk: 0, calls: 0 };
  }
}

/** CPU ms so far of every PostgreSQL server process on this machine (the backends the service talks to run there). */
export function postgresServerMs(): number {
  let ms = 0;
  for (const p of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ms += (Number(f[11]) + Number(f[12])) * 10 /* ms a clock tick (1/100 s) */;
    } catch {
      /* the process ended */
    }
  }
  return ms;
}

/** Child processes of `pid` (Linux). */
function childPids(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * Peak RSS of one service: its main process plus the node processes it started (the worker process),
 * summed (an upper bound: the two peaks need not coincide). The embedded anvil is not counted.
 */
export function serviceRssMb(pid: number): number {
  const nodeChildren = childPids(pid).filter((c) => {
    try {
      return !fs.readFileSync(`/proc/${c}/cmdline`, 'utf8').includes('anvil');
    } catch {
      return false;
    }
  });
  return [pid, ...nodeChildren].reduce((sum, p) => sum + peakRssMb(p), 0);
}

// --------------------------------------------------------------------------------- database reader

/** Plain SQL against the service's database, beside the running service (reads only). */
export interface DbReader {
  /** `$1, $2, …` placeholders, used in order (rewritten to `?` for SQLite). Values come back as JS values. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export async function openDbReader(se: Pick<ServiceEnv, 'db' | 'dataDir' | 'env'>): Promise<DbReader> {
  if (se.db === 'postgres') {
    const client = new pg.Client({ connectionString: se.env.DATABASE_URL });
    await client.connect();
    // A bench must never write into the service's database by mistake.
    await client.query('set session characteristics as transaction read only');
    return {
      query: async <T>(sql: string, params: unknown[] = []) => (await client.query(sql, params)).rows as T[],
      close: () => client.end(),
    };
  }
  const database = new SQLite(path.join(se.dataDir, 'mintworks.sqlite'), { readonly: true, fileMustExist: true });
  database.pragma('busy_timeout = 5000');
  return {
    query: async <T>(sql: string, params: unknown[] = []) => database.prepare(sql.replace(/\$\d+/g, '?')).all(...params) as T[],
    close: async () => void database.close(),
  };
}

// ------------------------------------------------------------------------------------------- load

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  total: number;
}

/**
 * `a` and `b` in turns (`a` first), `rounds` runs each: on a shared machine a slow spell then falls on
 * both, where one run of each can put it all on one side. `run(which, seconds)` makes one run. Each side:
 * requests a second over all its runs, p50 the median of its runs', p99 the largest of its runs' (a
 * percentile of all requests is not known from the runs' own), and the ratio b ÷ a of each turn.
 */
export async function alternately(
  rounds: number,
  seconds: number,
  run: (which: 'a' | 'b', seconds: number) => Promise<LoadResult>,
): Promise<{ a: LoadResult; b: LoadResult; ratios: number[] }> {
  const a: LoadResult[] = [];
  const b: LoadResult[] = [];
  for (let i = 0; i < rounds; i++) {
    a.push(await run('a', seconds / rounds));
    b.push(await run('b', seconds / rounds));
  }
  const merged = (rs: LoadResult[]): LoadResult => {
    const p50s = rs.map((r) => r.p50).sort((x, y) => x - y);
    const sum = (f: (r: LoadResult) => number) => rs.reduce((n, r) => n + f(r), 0);
    return {
      rps: Math.round(sum((r) => r.rps) / rs.length),
      p50: p50s[Math.floor(p50s.length / 2)],
      p99: Math.max(...rs.map((r) => r.p99)),
      non2xx: sum((r) => r.non2xx),
      errors: sum((r) => r.errors),
      total: sum((r) => r.total),
    };
  };
  return { a: merged(a), b: merged(b), ratios: a.map((r, i) => +(b[i].rps / r.rps).toFixed(3)) };
}

/**
 * autocannon against one route; `body` may hold `[<id>]`, replaced by a fresh id per request. `amount`:
 * that many requests, however long they take (instead of `seconds`).
 */
export async function load(opts: {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections?: number;
  seconds?: number;
  amount?: number;
}): Promise<LoadResult> {
  const r = await autocannon({
    url: opts.url,
    method: opts.method ?? 'GET',
    headers: opts.headers,
    body: opts.body,
    idReplacement: true,
    connections: opts.connections ?? 64,
    duration: opts.seconds ?? 10,
    ...(opts.amount ? { amount: opts.amount } : {}),
  });
  return {
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    total: r.requests.total,
  };
}

export const dbsFromArgs = (): DbKind[] => {
  const a = process.env.BENCH_DB;
  return a === 'sqlite' || a === 'postgres' ? [a] : ['sqlite', 'postgres'];
};

export function emit(line: Record<string, unknown>): void {
  console.log(JSON.stringify(line));
}

/** The asset every HTTP bench creates: `[<id>]` as the external id is replaced per request by `load`. */
export function benchAssetBody(user: string, collection: string, ext = '[<id>]') {
  return {
    user_uid: user,
    collection_uid: collection,
    asset_external_id: ext,
    sale_price_in_usd: 9.99,
    data: {
      name: 'Bench Sword',
      description: 'A bench item',
      unique_name: false,
      image_url: 'https://example.com/sword.png',
      store_image_on_ipfs: false,
      attributes: [{ trait_type: 'power', value: 9 }],
    },
  };
}
