// Composition root: config -> secrets -> store -> chain -> services -> workers + HTTP. `startService`
// is what `npm start` runs and what the integration tests start (once per test file).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { Logger } from 'pino';
import { ping } from '../store/db.js';
import { buildContext, createLogger, openCore } from './open-core.js';
import { WorkerPool } from '../jobs/worker.js';
import { ChainRuntime, WrongChainError } from '../chain/runtime.js';
import { isChainUnreachable } from '../chain/unreachable.js';
import { startEmbeddedChain, type EmbeddedChain } from '../chain/anvil.js';
import { preparePrivateDir } from '../util/private-dir.js';
import type { ChainCtx, Ctx } from '../services/context.js';
import type { ChainSender } from '../chain/sender.js';
import { walletJobHandler } from '../services/users/wallets.js';
import { CHAIN_JOB_KINDS, kindOn } from '../jobs/kinds.js';
import type { ChainIndexer } from '../services/chain/indexer.js';
import { startChainWork } from '../services/chain/work.js';
import { Pruner } from '../services/retention.js';
import { buildHttp } from '../http/app.js';
import { ensureDemoApp } from './demo-app.js';
import { webhookDispatcher } from '../webhooks/index.js';
import { prepareJobHandler } from '../services/assets/prepare-job.js';
import { printConsoleWelcome } from '../http/console/welcome.js';
import { publishJobHandler } from '../metadata/publish.js';
import { AssetIntake, writeCreatesWith } from '../services/assets/create.js';
import { CreatesThread } from './threads/creates-thread.js';
import { lockDataDir, mintworksOnPort } from '../util/data-dir-lock.js';
import { agreeOnInstallation } from '../services/installation.js';
import { PgChanges } from '../store/postgres/changes.js';
import { redactRpcUrl, type ProviderSnapshot } from '../chain/providers.js';
import { configureAlerts, stopAlerts } from '../chain/alerts.js';

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

/**
 * Fails fast, naming the setting, when HOST:PORT cannot be bound: before anything is created, so a
 * start that cannot serve leaves no Demo App or demo.env behind.
 */
export async function assertBindable(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (err) => void bindErrorNamingMintworks(err as NodeJS.ErrnoException, host, port).then(reject));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** bindError, saying which Mintworks holds the port when it is one of this machine. */
async function bindErrorNamingMintworks(err: NodeJS.ErrnoException, host: string, port: number): Promise<Error> {
  const other = err.code === 'EADDRINUSE' ? await mintworksOnPort(port).catch(() => null) : null;
  if (other) return new Error(`PORT ${port} is already in use on ${host} by another Mintworks (pid ${other.pid}, DATA_DIR ${other.dataDir}): stop it or set PORT to a free port (and, for another installation, a DATA_DIR of its own)`);
  return bindError(err, host, port);
}

function bindError(err: NodeJS.ErrnoException, host: string, port: number): Error {
  if (err.code === 'EADDRINUSE') return new Error(`PORT ${port} is already in use on ${host} (another Mintworks, or another program): stop it or set PORT to a free port`);
  if (err.code === 'EACCES') return new Error(`PORT ${port} needs privileges on ${host}: use a port above 1023 (and a reverse proxy for 80/443)`);
  if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return new Error(`HOST ${host} is not an address of this machine (${err.code}): use 127.0.0.1, 0.0.0.0 or one of its addresses`);
  return new Error(`cannot listen on HOST ${host} PORT ${port}: ${err.message}`);
}

export interface StartOptions {
  /** What /health reports as `worker_thread` when the workers run in a thread of `npm start`. */
  workers?: () => unknown;
  /** The chains' JSON-RPC providers as the workers' thread sees them (it makes most of the calls). */
  remoteProviders?: () => ProviderSnapshot[];
}

export async function startService(config: Config, log: Logger = createLogger(config), opts: StartOptions = {}): Promise<Service> {
  const started = Date.now();
  const cleanups: (() => Promise<void>)[] = [];
  let stopped = false;
  const fatalListeners: ((err: Error) => void)[] = [];
  const stop = async () => {
    stopped = true;
    for (const c of cleanups.reverse()) await c().catch((err) => log.error({ err }, 'shutdown step failed'));
    cleanups.length = 0;
  };
  try {
    // DATA_DIR is this process's alone with SQLite; PostgreSQL's processes share it (the content store).
    // The embedded chain's state in it belongs to one process whatever the database.
    ensureDir(config.dataDir);
    const isPostgres = /^postgres(ql)?:\/\//.test(config.databaseUrl ?? '');
    const release = await lockDataDir(config.dataDir, isPostgres ? 'shared' : 'exclusive', { port: config.runApi ? config.port : 0 });
    cleanups.push(async () => release());
    if (config.chains.some((c) => c.embedded) && !config.embeddedRpcUrl) {
      const releaseChain = await lockDataDir(config.dataDir, 'exclusive', { scope: 'chain', port: config.runApi ? config.port : 0, what: 'the embedded chain of DATA_DIR' });
      cleanups.push(async () => releaseChain());
    }
    if (config.runApi) await assertBindable(config.host, config.port);
    const operator = loadOperatorToken({ ...config, dataDir: ensureDir(config.dataDir) });
    config = { ...config, operatorToken: operator.token };
    const core = await openCore(config, log);
    cleanups.push(() => core.store.close());
    config = await agreeOnInstallation(core.store.db, config, { publicUrlSet: config.publicUrlSet, sole: !isPostgres, log });

    const homeChainId = checkHomeChain(core.homeChainId, config);

    // The chains: anvil started here (the embedded chain), and external JSON-RPC endpoints.
    let chain: EmbeddedChain | null = null;
    let chainRestarting = false;
    let service: Service | null = null;
    const runtimes: ChainRuntime[] = [];
    const runtimeDeps = { db: core.store.db, keys: core.keys, relayerCount: config.relayerCount, stuckSeconds: config.stuckSeconds, flush: () => core.store.flush(), rpcTimeoutMs: config.rpcTimeoutMs, remoteProviders: opts.remoteProviders };
    // Operator alerts go out from the process that runs the workers (the one that watches the chains).
    if (config.runWorkers) {
      const alertLog = log.child({ component: 'alerts' });
      configureAlerts(config.alertWebhookUrl && config.alertWebhookSecret ? { url: config.alertWebhookUrl, secret: config.alertWebhookSecret, policy: { allowPrivate: config.outboundAllowPrivate }, log: alertLog } : null, alertLog);
      cleanups.push(() => stopAlerts());
    }
    for (const spec of config.chains) {
      let rpcUrl: string;
      if (!spec.embedded) {
        rpcUrl = spec.rpc!;
      } else if (config.embeddedRpcUrl) {
        rpcUrl = config.embeddedRpcUrl; // the workers' thread: the main thread runs the embedded chain
      } else {
        // Automine only: a block per transaction and none while idle, so an idle chain does not grow. Blocks
        // that confirm others are needed only to wait for confirmations: then one a second.
        const chainOptions = { dataDir: config.dataDir, port: config.anvilPort, chainId: spec.id, logger: log.child({ component: 'anvil' }), blockTime: spec.confirmations > 0 ? 1 : undefined, nice: config.workerNice };
        chain = await startEmbeddedChain(chainOptions);
        cleanups.push(() => chain!.stop()); // whichever chain runs then
        rpcUrl = chain.rpcUrl;
        // A chain that dies is started again on its saved state (the same URL, so nothing else changes);
        // what the restart rewound is found by the tracker's reconciliation and sent again.
        const supervise = (c: EmbeddedChain) =>
          c.onExit(async () => {
            chainRestarting = true;
            for (let attempt = 1; attempt <= 3 && !stopped; attempt++) {
              await new Promise((r) => setTimeout(r, 500 * attempt));
              if (stopped) return;
              try {
                chain = await startEmbeddedChain(chainOptions);
                if (stopped) return void (await chain.stop()); // the service stopped meanwhile: no orphan
                if (service) service.chain = chain;
                supervise(chain);
                chainRestarting = false;
                log.warn({ attempt }, 'the embedded chain was restarted');
                return;
              } catch (err) {
                log.error({ err: (err as Error).message, attempt }, 'restarting the embedded chain failed');
              }
            }
            if (!stopped) for (const cb of fatalListeners) cb(new Error('the embedded chain died and could not be restarted'));
          });
        supervise(chain);
      }
      runtimes.push(new ChainRuntime(spec, rpcUrl, { ...runtimeDeps, log: log.child({ component: 'chain', chain: spec.id }) }));
    }
    const primary = runtimes[0];

    // The shared context: the default chain's sender (for what has no chain of its own), every chain's context by id.
    const ctx = buildContext({ config, log, core: { ...core, homeChainId }, sender: primary.sender });
    const works = runtimes.map((rt) => startChainWork(ctx, rt, config.runWorkers));
    works.forEach((w, i) => ctx.chains!.set(runtimes[i].spec.id, w.ctx));
    cleanups.push(async () => {
      for (const w of works) await w.stop();
    });
    cleanups.push(async () => {
      for (const rt of runtimes) await rt.stop();
    });

    // Bringing the chains up. The embedded chain is ours: it must come up, as before. An external chain
    // that is down or unfunded does not hold the start back: it comes up in the background, and /health
    // says what it waits for. A node that answers with another chain id stops the start.
    if (config.runWorkers) {
      await Promise.all(
        runtimes.map(async (rt) => {
          if (rt.spec.embedded) {
            await bringUp(rt, 60_000);
          } else {
            try {
              await rt.connect();
              await bringUp(rt, 60_000);
            } catch (err) {
              if (err instanceof WrongChainError) throw err;
              log.warn({ chain: rt.spec.id, rpc: redactRpcUrl(rt.rpcUrl), err: (err as Error).message }, 'chain not available yet: its work waits for it');
            }
          }
          rt.startMonitor();
        }),
      );
    } else {
      // Without workers this process only reads the chains (health, explorer); it checks their ids.
      for (const rt of runtimes) await rt.connect().catch((err) => { if (err instanceof WrongChainError) throw err; });
      // The embedded chain this process started is funded here all the same: worker processes beside
      // it (API=false) reach it as an external chain, which they never fund.
      if (chain) for (const rt of runtimes.filter((r) => r.spec.embedded)) await rt.sender.fundEmbeddedAccounts();
      for (const rt of runtimes) {
        // The forwarder's address is fixed; the effects that need it are registered on the sender all the same.
        rt.refresh().then(() => undefined, () => undefined);
      }
    }

    let workers: WorkerPool | null = null;
    if (config.runWorkers) {
      const handlers = [
        walletJobHandler(ctx),
        prepareJobHandler(ctx), // images and metadata documents before the mint (src/metadata)
        publishJobHandler(ctx), // optional IPFS node / pinning service
      ];
      // Where one process runs every worker (SQLite), what was running belonged to a previous run of
      // them. By kind, so that the claim index finds them.
      const kinds = [...handlers.map((h) => h.kind), ...config.chains.flatMap((c) => CHAIN_JOB_KINDS.map((k) => kindOn(ctx, k, c.id)))];
      await core.queue.releaseAbandoned(kinds);
      workers = new WorkerPool(core.queue, log.child({ component: 'worker' }), `${os.hostname()}:${process.pid}`, isChainUnreachable);
      workers.start(handlers);
      cleanups.push(() => workers!.stop());
      const webhooks = webhookDispatcher(ctx, { workerId: `${os.hostname()}:${process.pid}` });
      webhooks.start();
      cleanups.push(() => webhooks.stop());
      if (isPostgres) {
        // Work other processes insert wakes these workers at once (migration 019), not at the next poll.
        const signals = core.queue.signals;
        const wakeups = new PgChanges(config.databaseUrl!, log.child({ component: 'wakeups' }), {
          changes: false,
          onWake: (kind) => (kind === '*' ? signals.eventNames().forEach((k) => signals.emit(k)) : void signals.emit(kind)),
        });
        await wakeups.start();
        cleanups.push(() => wakeups.stop());
      }
      const pruner = new Pruner(ctx, config.retentionDays, log.child({ component: 'retention' }));
      pruner.start();
      cleanups.push(() => pruner.stop());
    }

    let creates: CreatesThread | null = null;
    if (config.runApi && config.createsThread) {
      // Before the HTTP server, so it stops after the server has answered its last request.
      creates = new CreatesThread({ config, log: log.child({ component: 'creates' }), local: new AssetIntake(ctx), announce: (kinds) => kinds.forEach((k) => ctx.queue.notify(k)), flush: () => core.store.flush() });
      const thread = creates;
      cleanups.push(() => thread.stop());
      await thread.start();
      writeCreatesWith(ctx, creates);
    }

    let httpServer: FastifyInstance | null = null;
    let url = config.publicUrl;
    // Not ready before start-up is over: the Demo App (and its demo.env) is written after the port is bound.
    let startedUp = false;
    if (config.runApi) {
      // What cached reads need to stay current (on PostgreSQL: a connection listening for changes).
      // Others write beside this process unless its workers run here (inline, or in the thread of `npm start`).
      const othersWrite = !config.runWorkers && opts.workers === undefined;
      const changes = config.assetCacheEntries > 0 ? core.store.changeFeed(log.child({ component: 'changes' }), { othersWrite }) : null;
      if (changes) {
        await changes.start();
        cleanups.push(() => changes.stop());
      }
      httpServer = await buildHttp({
        ctx,
        logger: log,
        changes,
        runtimes,
        health: async () => {
          const [chains] = await Promise.all([Promise.all(runtimes.map((rt) => rt.health(rt.spec.embedded && chainRestarting))), ping(core.store.db)]);
          const first = chains[0];
          const relayers = first.accounts.filter((a) => a.role === 'relayer').map((a) => ({ address: a.address, balance_wei: a.balance_wei ?? '-1', low: a.low }));
          const low = relayers.filter((r) => r.low);
          return {
            // The default chain answering is what makes the service ready; every chain says its own state.
            // Not ready while the default chain cannot take work (unreachable, an account to fund, the forwarder
            // being deployed): its status says which.
            ready: startedUp && first.ready && !chainRestarting,
            status: !startedUp ? 'starting' : chainRestarting ? 'chain restarting' : !first.ready ? first.status : low.length ? 'relayer balance low' : 'ok',
            relayers,
            store: core.store.dialect,
            chain: { chain_id: first.chain_id, name: first.name, block: first.block, embedded: first.embedded },
            chains,
            workers: config.runWorkers || opts.workers !== undefined,
            ...(opts.workers ? { worker_thread: opts.workers() } : {}),
            ...(creates ? { creates_thread: creates.status() } : {}),
            jobs: await core.queue.counts(),
            unconfirmed_transactions: await primary.sender.pendingCount(),
            uptime_s: Math.round((Date.now() - started) / 1000),
          };
        },
      });
      await httpServer.listen({ port: config.port, host: config.host }).catch((err) => {
        throw bindError(err as NodeJS.ErrnoException, config.host, config.port);
      });
      cleanups.push(() => httpServer!.close());
      const addr = httpServer.server.address();
      if (addr && typeof addr === 'object' && !process.env.PUBLIC_URL && config.port === 0) url = `http://127.0.0.1:${addr.port}`;
    }
    // Only now that the port is bound: a start that fails creates nothing a later one would trip on.
    const quiet = config.logLevel === 'silent';
    if (operator.generated && config.runApi && !quiet) printConsoleWelcome(config.publicUrl, operator.generated);
    if (config.demoApp) await ensureDemoApp(ctx, { url, rpcUrl: primary.rpcUrl, print: !quiet });
    startedUp = true;

    // Said once per service: by the process (or thread) that serves the API; workers on their own say
    // `workers ready`, with the public URL they mint for. A chain's readiness is known where the workers run.
    const chainsUp = runtimes.map((rt) => ({ id: rt.spec.id, name: rt.spec.name, rpc: rt.spec.embedded ? 'embedded anvil' : rt.providers.snapshot().map((p) => p.provider).join(', '), ...(config.runWorkers ? { ready: rt.ready } : {}) }));
    if (config.runApi) log.info({ url, store: core.store.describe, chains: chainsUp, ms: Date.now() - started }, 'mintworks ready');
    else log.info({ public_url: config.publicUrl, store: core.store.describe, chains: chainsUp, ms: Date.now() - started }, 'workers ready');
    service = {
      ctx,
      url,
      rpcUrl: primary.rpcUrl,
      http: httpServer,
      chain,
      creates,
      runtimes,
      stop,
      // Read when asked: an external chain that comes up after the start gets its indexer then.
      get indexer() {
        return works[0].indexer;
      },
      onFatal: (cb) => void fatalListeners.push(cb),
    };
    return service;
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The database's home chain: the chain every record was on before there were several (recorded in
 * `meta` by the first start). The embedded chain's state file does not remember its chain id, so an
 * embedded chain started with another CHAIN_ID than the one this database recorded for it is refused.
 */
function checkHomeChain(home: number, config: Config): number {
  const embedded = config.chains.find((c) => c.embedded);
  if (embedded && embedded.id !== home && !config.chains.some((c) => c.id === home)) {
    throw new Error(`CHAIN_ID is ${embedded.id}, but this database (DATA_DIR / DATABASE_URL) belongs to chain ${home}; use a new DATA_DIR/DATABASE_URL for another chain`);
  }
  return home;
}

/** Steps a chain until it is ready or cannot go on without outside help (funds, the node). */
async function bringUp(rt: ChainRuntime, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await rt.step()) return;
    // Waiting for the forwarder's deployment is progress; an unfunded account is not.
    if (rt.waitingFor !== 'deploying the forwarder') return;
    if (Date.now() > deadline) throw new Error(`the forwarder contract at ${rt.forwarderAddress} did not appear on chain ${rt.spec.id} within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function ensureDir(d: string): string {
  preparePrivateDir(d);
  return d;
}
