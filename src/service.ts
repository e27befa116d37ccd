// Composition root: config -> secrets -> store -> chain -> services -> workers + HTTP. `startService`
// is what `npm start` runs and what the integration tests start (once per test file).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import pino, { type Logger } from 'pino';
import { createPublicClient, defineChain, getContractAddress, http, type Address, type PublicClient } from 'viem';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { openStore, ping, type Store } from './store/db.js';
import { migrateToLatest } from './store/migrate.js';
import { JobQueue } from './jobs/queue.js';
import { WorkerPool } from './jobs/worker.js';
import { KeyRing } from './chain/keys.js';
import { ChainSender, claimOutcome } from './chain/sender.js';
import { isChainUnreachable } from './chain/unreachable.js';
import { startEmbeddedChain, type EmbeddedChain } from './chain/anvil.js';
import { artifact } from './chain/artifacts.js';
import { SecretBox } from './util/secretbox.js';
import { preparePrivateDir } from './util/private-dir.js';
import { prettyDestination } from './util/log-format.js';
import type { Ctx } from './services/context.js';
import { walletJobHandler } from './services/wallets.js';
import { mintJobHandler, mintOutcome } from './services/assets.js';
import { MINT_JOB } from './jobs/kinds.js';
import { deployJobHandler, deployOutcome } from './services/collections.js';
import { registerRewardOutcomes, rewardJobHandlers } from './services/rewards/index.js';
import { editJobHandler, editOutcome, forwardJobHandler, forwardOutcome } from './services/lifecycle.js';
import { ChainIndexer } from './services/indexer.js';
import { Pruner } from './services/retention.js';
import { buildHttp } from './http/app.js';
import { ensureDemoApp } from './demo.js';
import { webhookDispatcher } from './webhooks/index.js';
import { prepareJobHandler } from './metadata/prepare.js';
import { printConsoleWelcome } from './console/welcome.js';
import { publishJobHandler } from './metadata/publish.js';

export interface Service {
  ctx: Ctx;
  url: string;
  /** The chain's JSON-RPC URL (the embedded chain's, or CHAIN_RPC_URL). */
  rpcUrl: string;
  http: FastifyInstance | null;
  /** The embedded chain (replaced when it is restarted after dying), or null with CHAIN_RPC_URL. */
  chain: EmbeddedChain | null;
  /** Called when the service cannot go on (the embedded chain died and cannot be restarted). */
  onFatal(cb: (err: Error) => void): void;
  indexer: ChainIndexer | null;
  stop(): Promise<void>;
}

export function createLogger(config: Pick<Config, 'logLevel'> & Partial<Pick<Config, 'logFormat'>>): Logger {
  const options = {
    level: config.logLevel,
    // Belt and braces: whatever is logged, these paths never show their values.
    redact: { paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'headers.authorization', 'headers["x-api-key"]', '*.api_secret', 'api_secret', '*.secret', 'secret', '*.token'], censor: '[redacted]' },
  };
  // LOG_FORMAT (src/config.ts): readable lines on a terminal, JSON for log collectors.
  return config.logFormat === 'pretty' ? pino(options, prettyDestination()) : pino(options);
}

/** MASTER_KEY from the environment, else a key generated once into DATA_DIR (with a loud warning). */
export function loadMasterKey(config: Config, log: Logger): string {
  if (config.masterKeyHex) return config.masterKeyHex;
  const file = path.join(config.dataDir, 'master.key');
  if (!fs.existsSync(file)) {
    preparePrivateDir(config.dataDir);
    fs.writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    log.warn({ file }, 'MASTER_KEY is not set: generated one into DATA_DIR. Anyone who can read DATA_DIR can decrypt the wallet seed and API secrets; set MASTER_KEY (openssl rand -hex 32) for production and keep it elsewhere.');
  }
  const key = fs.readFileSync(file, 'utf8').trim();
  if (!/^[0-9a-f]{64}$/i.test(key)) throw new Error(`${file} does not hold a 64-hex-character key (MASTER_KEY)`);
  return key;
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
    probe.once('error', (err) => reject(bindError(err as NodeJS.ErrnoException, host, port)));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

function bindError(err: NodeJS.ErrnoException, host: string, port: number): Error {
  if (err.code === 'EADDRINUSE') return new Error(`PORT ${port} is already in use on ${host} (another Mintworks, or another program): stop it or set PORT to a free port`);
  if (err.code === 'EACCES') return new Error(`PORT ${port} needs privileges on ${host}: use a port above 1023 (and a reverse proxy for 80/443)`);
  if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return new Error(`HOST ${host} is not an address of this machine (${err.code}): use 127.0.0.1, 0.0.0.0 or one of its addresses`);
  return new Error(`cannot listen on HOST ${host} PORT ${port}: ${err.message}`);
}

/** Opens the store with migrations applied, and the secrets: enough for the CLI. */
export async function openCore(config: Config, log: Logger): Promise<{ store: Store; box: SecretBox; keys: KeyRing; queue: JobQueue }> {
  preparePrivateDir(config.dataDir); // 0700, files 0600 (src/util/private-dir.ts)
  const box = new SecretBox(loadMasterKey(config, log));
  const store = openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    const applied = await migrateToLatest(store);
    if (applied.length) log.info({ migrations: applied, store: store.describe }, 'database migrated');
  } catch (err) {
    await store.close();
    throw new Error(`cannot open the database ${store.describe} (DATABASE_URL): ${(err as Error).message}`);
  }
  let keys: KeyRing;
  try {
    keys = await KeyRing.open(store.db, box);
  } catch (err) {
    await store.close();
    const where = config.masterKeyHex ? 'MASTER_KEY' : `${path.join(config.dataDir, 'master.key')} (MASTER_KEY is not set)`;
    throw new Error(
      `the wallet seed in the database ${store.describe} does not open with the master key from ${where}: ${(err as Error).message}. ` +
        `The master key lives outside the database${config.databaseUrl ? ' (also with DATABASE_URL: in DATA_DIR, unless MASTER_KEY is set)' : ''}. ` +
        `Set MASTER_KEY to the key this installation was created with (its DATA_DIR/master.key, or the master.key of a backup made with \`mintworks backup\`), ` +
        `or point DATA_DIR at the directory that holds it.`,
    );
  }
  return { store, box, keys, queue: new JobQueue(store.db, store.dialect) };
}

export interface StartOptions {
  /** What /health reports as `worker_thread` when the workers run in a thread of `npm start`. */
  workers?: () => unknown;
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
    if (config.runApi) await assertBindable(config.host, config.port);
    const operator = loadOperatorToken({ ...config, dataDir: ensureDir(config.dataDir) });
    config = { ...config, operatorToken: operator.token };
    const core = await openCore(config, log);
    cleanups.push(() => core.store.close());

    // The chain: a real JSON-RPC endpoint, or anvil started here.
    let chain: EmbeddedChain | null = null;
    let chainRestarting = false;
    let service: Service | null = null;
    let rpcUrl: string;
    if (config.chainRpcUrl) {
      rpcUrl = config.chainRpcUrl;
    } else if (config.embeddedRpcUrl) {
      rpcUrl = config.embeddedRpcUrl; // the worker process: its parent runs the embedded chain
    } else {
      // Automine only: a block per transaction and none while idle, so an idle chain does not grow. Blocks
      // that confirm others are needed only to wait for confirmations: then one a second.
      const chainOptions = { dataDir: config.dataDir, port: config.anvilPort, chainId: config.chainId, logger: log.child({ component: 'anvil' }), blockTime: config.confirmations > 0 ? 1 : undefined };
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
    const client = createPublicClient({
      chain: defineChain({ id: config.chainId, name: config.chainName, nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [rpcUrl] } } }),
      transport: http(rpcUrl, { timeout: 15_000, retryCount: 2 }),
      pollingInterval: 250,
    }) as PublicClient;
    const actualChainId = await client.getChainId().catch((err) => {
      throw new Error(`cannot reach the chain at ${rpcUrl} (CHAIN_RPC_URL): ${(err as Error).message}`);
    });
    if (actualChainId !== config.chainId) throw new Error(`the chain at ${rpcUrl} has chain id ${actualChainId}, but CHAIN_ID is ${config.chainId}`);
    await assertSameChain(core.store, config.chainId);

    const sender = new ChainSender(core.store.db, client, core.keys, config.chainId, log.child({ component: 'chain' }), {
      relayerCount: config.relayerCount,
      embedded: !config.chainRpcUrl,
      confirmations: config.confirmations,
      stuckMs: config.stuckSeconds * 1000,
    });
    const ctx: Ctx = { config, db: core.store.db, dialect: core.store.dialect, queue: core.queue, box: core.box, log, keys: core.keys, sender, groupCommit: core.store.groupCommit };
    sender.onOutcome('asset.mint', mintOutcome(ctx));
    sender.onOutcome('collection.deploy', deployOutcome(ctx));
    registerRewardOutcomes(ctx); // reward.deploy|allocate|claim|withdraw (forwarder address read from each tx's payload)
    sender.onOutcome('forwarder.deploy', async (row) => {
      await core.store.db.transaction().execute((tx) => claimOutcome(tx, row.id));
    });
    await sender.init();
    ctx.forwarder = await ensureForwarder(ctx, sender, log);
    // Effects that relay through the forwarder need its address; until registered, outcomes wait.
    sender.onOutcome('forward', forwardOutcome(ctx));
    sender.onOutcome('asset.edit', editOutcome(ctx));

    let workers: WorkerPool | null = null;
    let indexer: ChainIndexer | null = null;
    if (config.runWorkers) {
      const handlers = [
        walletJobHandler(ctx, MINT_JOB),
        deployJobHandler(ctx),
        prepareJobHandler(ctx), // images and metadata documents before the mint (src/metadata)
        mintJobHandler(ctx),
        publishJobHandler(ctx), // optional IPFS node / pinning service
        forwardJobHandler(ctx), // transfers and burns
        editJobHandler(ctx),
        ...rewardJobHandlers(ctx),
      ];
      if (core.store.dialect === 'sqlite') {
        // On SQLite one service process runs the workers (in its workers' thread, or inline): whatever
        // was running belonged to a previous run of them. By kind, so that the claim index finds them.
        await core.store.db.updateTable('jobs').set({ status: 'queued', lease_until: null }).where('kind', 'in', handlers.map((h) => h.kind)).where('status', '=', 'running').execute();
      }
      sender.start();
      cleanups.push(() => sender.stop());
      workers = new WorkerPool(core.queue, log.child({ component: 'worker' }), `${os.hostname()}:${process.pid}`, isChainUnreachable);
      workers.start(handlers);
      cleanups.push(() => workers!.stop());
      indexer = new ChainIndexer(ctx);
      indexer.start();
      cleanups.push(() => indexer!.stop());
      const webhooks = webhookDispatcher(ctx, { workerId: `${os.hostname()}:${process.pid}` });
      webhooks.start();
      cleanups.push(() => webhooks.stop());
      const pruner = new Pruner(ctx, config.retentionDays, log.child({ component: 'retention' }));
      pruner.start();
      cleanups.push(() => pruner.stop());
    }

    let httpServer: FastifyInstance | null = null;
    let url = config.publicUrl;
    if (config.runApi) {
      httpServer = await buildHttp({
        ctx,
        logger: log,
        health: async () => {
          const [block, relayers] = await Promise.all([client.getBlockNumber().catch(() => null), sender.relayerStatus(), ping(core.store.db)]);
          const low = relayers.filter((r) => r.low);
          return {
            ready: block !== null && !chainRestarting,
            status: chainRestarting ? 'chain restarting' : block === null ? 'chain unreachable' : low.length ? 'relayer balance low' : 'ok',
            relayers,
            store: core.store.dialect,
            chain: { chain_id: config.chainId, name: config.chainName, block: block === null ? null : Number(block), embedded: chain !== null },
            workers: config.runWorkers || opts.workers !== undefined,
            ...(opts.workers ? { worker_thread: opts.workers() } : {}),
            jobs: await core.queue.counts(),
            unconfirmed_transactions: await sender.pendingCount(),
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
    if (config.demoApp) await ensureDemoApp(ctx, { url, rpcUrl, print: !quiet });

    log.info({ url, store: core.store.describe, chainId: config.chainId, rpc: chain ? 'embedded anvil' : rpcUrl, ms: Date.now() - started }, 'mintworks ready');
    service = { ctx, url, rpcUrl, http: httpServer, chain, indexer, stop, onFatal: (cb) => void fatalListeners.push(cb) };
    return service;
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * One installation serves one chain: its records (contracts, nonces, token ids) mean nothing on another.
 * The embedded chain's state file does not remember its chain id, so the database does.
 */
async function assertSameChain(store: Store, chainId: number): Promise<void> {
  await store.db.insertInto('meta').values({ key: 'chain_id', value: String(chainId) }).onConflict((oc) => oc.column('key').doNothing()).execute();
  const row = await store.db.selectFrom('meta').select('value').where('key', '=', 'chain_id').executeTakeFirstOrThrow();
  if (row.value !== String(chainId)) throw new Error(`CHAIN_ID is ${chainId}, but this database (DATA_DIR / DATABASE_URL) belongs to chain ${row.value}; use a new DATA_DIR/DATABASE_URL for another chain`);
}

function ensureDir(d: string): string {
  preparePrivateDir(d);
  return d;
}

/**
 * The ERC-2771 forwarder that collections trust. It is the deployer account's first transaction, so
 * its address is fixed for an installation and survives a rewound chain (it is simply deployed again).
 */
async function ensureForwarder(ctx: Ctx, sender: ChainSender, log: Logger): Promise<Address> {
  const deployer = ctx.keys.deployer();
  const address = getContractAddress({ from: deployer.address, nonce: 0n });
  const hasCode = async () => ((await sender.client.getCode({ address })) ?? '0x') !== '0x';
  if (await hasCode()) return address;
  const recorded = await ctx.db.selectFrom('chain_txs').select('id').where('kind', '=', 'forwarder.deploy').executeTakeFirst();
  if (!recorded) {
    const nonce = await sender.client.getTransactionCount({ address: deployer.address });
    if (nonce !== 0) throw new Error(`the deployer account ${deployer.address} has been used (nonce ${nonce}) but holds no forwarder: this chain does not belong to this DATA_DIR's seed`);
    if ((await sender.client.getBalance({ address: deployer.address })) === 0n) {
      throw new Error(`the deployer account ${deployer.address} has no funds on chain ${ctx.config.chainId}: send it some native currency for gas (it deploys the ERC-2771 forwarder once), then start again`);
    }
    const { bytecode } = artifact('MintworksForwarder');
    const row = await ctx.db.transaction().execute((tx) => sender.record(tx, { kind: 'forwarder.deploy', ref: 'forwarder', payload: {}, to: null, data: bytecode, gas: 3_000_000n, signer: deployer }));
    await sender.broadcast([row]);
  }
  const deadline = Date.now() + 60_000;
  while (!(await hasCode())) {
    if (Date.now() > deadline) throw new Error(`the forwarder contract at ${address} did not appear on chain within 60 s`);
    await sender.trackOnce();
    await new Promise((r) => setTimeout(r, 200));
  }
  log.info({ forwarder: address }, 'forwarder contract ready');
  return address;
}
