// Composition root: config -> secrets -> store -> chain -> services -> workers + HTTP. `startService`
// is what `npm start` runs and what the integration tests start (once per test file). It only wires: the
// parts start in modules of their own beside it (chains.ts, workers.ts, http.ts, health.ts), and each
// registers its stop on the Shutdown as it starts, so the order of the calls here is the start order and
// its reverse the stop order.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { freezeConfig, type Config, type Installation } from '../config/config.js';
import type { Ctx } from '../services/context.js';
import type { ChainRuntime } from '../chain/runtime.js';
import type { EmbeddedChain } from '../chain/anvil.js';
import type { ProviderSnapshot } from '../chain/providers.js';
import type { ChainIndexer } from '../services/chain/indexer.js';
import { startChainWork } from '../services/chain/work.js';
import { agreeOnInstallation } from '../services/installation.js';
import { printConsoleWelcome } from '../http/console/welcome.js';
import { preparePrivateDir } from '../util/private-dir.js';
import { lockDataDir } from './data-dir-lock.js';
import { openCore, type Booting, type Core } from './open-core.js';
import { buildContext } from './context.js';
import { createLogger } from './logger.js';
import { Shutdown } from './shutdown.js';
import { assertBindable } from './bind.js';
import { bringUpChains, checkHomeChain, configureOperatorAlerts, startChains } from './chains.js';
import { startWorkers } from './workers.js';
import { healthReport } from './health.js';
import { readyWhenHealthy } from './ready-watch.js';
import { ensureDemoApp } from './demo-app.js';
import type { CreatesThread } from './threads/creates-thread.js';
import { threadMemory, type ThreadMemory } from '../util/thread-memory.js';

export interface Service {
  ctx: Ctx;
  url: string;
  /** The default chain's JSON-RPC URL (the embedded chain's, or the first external chain's). */
  rpcUrl: string;
  /** Every chain served, the default one first. */
  runtimes: ChainRuntime[];
  http: FastifyInstance | null;
  /** The embedded chain (replaced when it is restarted after dying), or null with CHAIN_RPC_URL. */
  chain: EmbeddedChain | null;
  /** Called when the service cannot go on (the embedded chain died and cannot be restarted). */
  onFatal(cb: (err: Error) => void): void;
  /** The default chain's indexer (each chain has its own). */
  indexer: ChainIndexer | null;
  /** The thread POST /asset's creates are written in (CREATES_THREAD), or null. */
  creates: CreatesThread | null;
  stop(): Promise<void>;
}

/**
 * OPERATOR_TOKEN from the environment, else generated once into DATA_DIR/operator.token. `generated`
 * says the file was created now (the first start, which then says where the console is).
 */
export function loadOperatorToken(config: Config): { token: string; generated: string | null } {
  if (config.operatorToken) return { token: config.operatorToken, generated: null };
  const file = path.join(config.dataDir, 'operator.token');
  let generated: string | null = null;
  if (!fs.existsSync(file)) {
    fs.writeFileSync(file, randomBytes(24).toString('base64url') + '\n', { mode: 0o600, flag: 'wx' });
    generated = file;
  }
  return { token: fs.readFileSync(file, 'utf8').trim(), generated };
}

export interface StartOptions {
  /** What /health reports as `worker_thread` when the workers run in a thread of `npm start`. */
  workers?: () => unknown;
  /** The chains' JSON-RPC providers as the workers' thread sees them (it makes most of the calls). */
  remoteProviders?: () => ProviderSnapshot[];
  /** The heap of the workers' thread of `npm start`, as it last reported it (for /metrics). */
  workersMemory?: () => ThreadMemory | null;
  /**
   * The workers' thread of `npm start`: the JSON-RPC URL of the embedded chain the main thread runs
   * (wiring between the threads, not a setting).
   */
  embeddedRpcUrl?: string;
}

// Long: the start order is the stop order: the parts come up top to bottom, each registering its stop as it starts.
export async function startService(config: Config, log: Logger = createLogger(config), opts: StartOptions = {}): Promise<Service> {
  const started = Date.now();
  const shutdown = new Shutdown(log);
  const fatalListeners: ((err: Error) => void)[] = [];
  try {
    freezeConfig(config); // what the operator set stays as set: what the start settles goes to `installation`
    const isPostgres = /^postgres(ql)?:\/\//.test(config.databaseUrl ?? '');
    await claimDataDir(config, isPostgres, shutdown, opts.embeddedRpcUrl);
    if (config.runApi) await assertBindable(config.host, config.port);
    ensureDir(config.dataDir);
    const operator = loadOperatorToken(config);
    // With the workers in a thread of this process, that thread checkpoints SQLite's WAL (open-core.ts):
    // a checkpointer here as well would be a second thread and V8 heap (~11 MB) doing the same work.
    const core = await openCore(config, log, opts.workers !== undefined ? { store: { checkpoints: 'none' } } : {});
    shutdown.add(() => core.store.close());
    const installation = await settleInstallation(config, core, { isPostgres, operatorToken: operator.token, log });

    const boot: Booting = { config, log, core, shutdown };
    await configureOperatorAlerts(config, log, shutdown);
    const chains = await startChains(boot, {
      specs: installation.chains,
      embeddedRpcUrl: opts.embeddedRpcUrl,
      remoteProviders: opts.remoteProviders,
      onFatal: (err) => fatalListeners.forEach((cb) => cb(err)),
    });
    const { runtimes, embedded } = chains;
    const primary = runtimes[0];
    // The shared context: the default chain's sender (for what has no chain of its own), every chain's context by id.
    const ctx = buildContext({ config, installation, log, core, sender: primary.sender });
    const works = runtimes.map((rt) => startChainWork(ctx, rt, config.runWorkers));
    works.forEach((w, i) => ctx.chains!.set(runtimes[i].spec.id, w.ctx));
    // Stopped in reverse: each chain's work (its job pools, its indexer) before the runtime it uses.
    shutdown.add(async () => {
      for (const rt of runtimes) await rt.stop();
    });
    shutdown.add(async () => {
      for (const w of works) await w.stop();
    });
    await bringUpChains(boot, chains, opts.embeddedRpcUrl);

    if (config.runWorkers) await startWorkers(ctx, boot);
    const httpSide = config.runApi ? await loadHttpSide() : null;
    const creates = httpSide && config.createsThread ? await httpSide.startCreatesThread(ctx, boot) : null;
    // Not ready before start-up is over: the Demo App (and its demo.env) is written after the port is bound.
    let startedUp = false;
    // `mintworks ready` is said when /health first answers 200, not before (readyWhenHealthy).
    let sayReady: ((h: { ready: boolean }) => void) | null = null;
    const report = () =>
      healthReport({
        runtimes,
        chainRestarting: () => embedded?.restarting ?? false,
        startedUp: () => startedUp,
        store: core.store,
        queue: core.queue,
        workers: config.runWorkers || opts.workers !== undefined,
        workerThread: opts.workers,
        creates,
        started,
      });
    const health = async () => {
      const h = await report();
      sayReady?.(h);
      return h;
    };
    // Others write beside this process unless its workers run here (inline, or in the thread of `npm start`).
    const threads = () => [threadMemory('api'), creates?.memory(), opts.workersMemory?.()].filter((m): m is ThreadMemory => !!m);
    const othersWrite = !config.runWorkers && opts.workers === undefined;
    const createsGauges = { createsInFlight: () => creates?.inFlightCount ?? 0, createsWaits: () => creates?.waits() ?? null };
    const served = httpSide ? await httpSide.startHttp(ctx, boot, { runtimes, health, othersWrite, threads, ...createsGauges }) : null;
    const url = served?.url ?? installation.publicUrl;
    // Only now that the port is bound: a start that fails creates nothing a later one would trip on.
    const quiet = config.logLevel === 'silent';
    if (operator.generated && config.runApi && !quiet) printConsoleWelcome(installation.publicUrl, operator.generated);
    if (config.demoApp) await ensureDemoApp(ctx, { url, rpcUrl: primary.rpcUrl, print: !quiet });
    startedUp = true;
    if (config.runApi) sayReady = readyWhenHealthy(shutdown, health, (h) => logReady(ctx, core, runtimes, url, started, h));
    else logReady(ctx, core, runtimes, url, started);
    return {
      ctx,
      url,
      rpcUrl: primary.rpcUrl,
      http: served?.http ?? null,
      // Read when asked: a restart replaces the node.
      get chain() {
        return embedded?.current ?? null;
      },
      creates,
      runtimes,
      stop: () => shutdown.run(),
      // Read when asked: an external chain that comes up after the start gets its indexer then.
      get indexer() {
        return works[0].indexer;
      },
      onFatal: (cb) => void fatalListeners.push(cb),
    };
  } catch (err) {
    await shutdown.run();
    throw err;
  }
}

/**
 * The HTTP side, loaded only where it runs: the workers' thread of `npm start` does without Fastify, the
 * routes and their schemas (~5 MB of its heap).
 */
async function loadHttpSide() {
  const { startCreatesThread, startHttp } = await import('./http.js');
  return { startCreatesThread, startHttp };
}

/** What every process of the installation agrees on, this one's operator token and the database's home chain with it. */
function settleInstallation(config: Config, core: Core, p: { isPostgres: boolean; operatorToken: string; log: Logger }): Promise<Installation> {
  return agreeOnInstallation(core.store.db, config, {
    publicUrlSet: config.publicUrlSet,
    sole: !p.isPostgres,
    log: p.log,
    operatorToken: p.operatorToken,
    homeChainId: checkHomeChain(core.homeChainId, config),
  });
}

/**
 * DATA_DIR is this process's alone with SQLite; PostgreSQL's processes share it (the content store).
 * The embedded chain's state in it belongs to one process whatever the database.
 */
async function claimDataDir(config: Config, isPostgres: boolean, shutdown: Shutdown, embeddedRpcUrl: string | undefined): Promise<void> {
  ensureDir(config.dataDir);
  const release = await lockDataDir(config.dataDir, isPostgres ? 'shared' : 'exclusive', { port: config.runApi ? config.port : 0 });
  shutdown.add(async () => release());
  if (config.chains.some((c) => c.embedded) && !embeddedRpcUrl) {
    const releaseChain = await lockDataDir(config.dataDir, 'exclusive', {
      scope: 'chain',
      port: config.runApi ? config.port : 0,
      what: 'the embedded chain of DATA_DIR',
    });
    shutdown.add(async () => releaseChain());
  }
}

/**
 * Said once per service: by the process (or thread) that serves the API (`mintworks listening`, then
 * `mintworks ready`); workers on their own say `workers ready`, with the public URL they mint for. A
 * chain's readiness is known where the workers run.
 */
function logReady(ctx: Ctx, core: Core, runtimes: ChainRuntime[], url: string, started: number, healthy?: { ready: boolean } | null): void {
  const { config, log } = ctx;
  const chainsUp = runtimes.map((rt) => ({
    id: rt.spec.id,
    name: rt.spec.name,
    rpc: rt.spec.embedded
      ? 'embedded anvil'
      : rt.providers
          .snapshot()
          .map((p) => p.provider)
          .join(', '),
    ...(config.runWorkers ? { ready: rt.ready } : {}),
  }));
  if (config.runApi && healthy === null) log.info({ url, store: core.store.describe, ms: Date.now() - started }, 'mintworks listening');
  else if (config.runApi) log.info({ url, store: core.store.describe, chains: chainsUp, ms: Date.now() - started }, 'mintworks ready');
  else log.info({ public_url: ctx.installation.publicUrl, store: core.store.describe, chains: chainsUp, ms: Date.now() - started }, 'workers ready');
}

function ensureDir(d: string): string {
  preparePrivateDir(d);
  return d;
}
