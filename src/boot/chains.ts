// The chains a service serves: the embedded chain (anvil, started and supervised here) and external
// JSON-RPC endpoints, each with its runtime; then bringing them up once the services' context has
// their work.
import { genesisHash, recordChainIdentity } from '../services/chain-identity.js';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { ChainSpec } from '../chain/chains.js';
import type { Booting } from './open-core.js';
import type { Shutdown } from './shutdown.js';
import { ChainRuntime, WrongChainError } from '../chain/runtime.js';
import { startSupervisedChain, type SupervisedChain } from '../chain/anvil/supervised-chain.js';
import { redactRpcUrl, type ProviderSnapshot } from '../chain/providers.js';
import { configureAlerts, stopAlerts } from '../chain/alerts.js';
import { assertAllowedUrl, OutboundBlockedError } from '../net/outbound.js';
import { redactUrl } from '../net/redact-url.js';

export interface Chains {
  /** Every chain served, the default one first. */
  runtimes: ChainRuntime[];
  /** The embedded chain this process runs, or null (external chains only, or the workers' thread). */
  embedded: SupervisedChain | null;
}

export interface ChainsOptions {
  /** The chains served, the default one first, as the installation agreed on them. */
  specs: readonly ChainSpec[];
  /** The workers' thread: the JSON-RPC URL of the embedded chain the main thread runs. */
  embeddedRpcUrl?: string;
  /** The chains' JSON-RPC providers as the workers' thread sees them (it makes most of the calls). */
  remoteProviders?: () => ProviderSnapshot[];
  /** Called when the embedded chain died and could not be restarted. */
  onFatal(err: Error): void;
}

/**
 * Operator alerts go out from the process that runs the workers (the one that watches the chains).
 * Every process checks ALERT_WEBHOOK_URL against the outbound guard first: a destination it refuses
 * stops the start, instead of every alert failing quietly later.
 */
export async function configureOperatorAlerts(config: Config, log: Logger, shutdown: Shutdown): Promise<void> {
  if (config.alertWebhookUrl) {
    try {
      await assertAllowedUrl(config.alertWebhookUrl, { allowPrivate: config.outboundAllowPrivate });
    } catch (err) {
      if (err instanceof OutboundBlockedError) {
        throw new Error(
          `ALERT_WEBHOOK_URL (${redactUrl(config.alertWebhookUrl)}) is refused by the outbound guard: ${err.reason}. ` +
            'Use a public http(s) address (or OUTBOUND_ALLOW_PRIVATE=true for a receiver on a private network)',
        );
      }
      log.warn(
        { url: redactUrl(config.alertWebhookUrl), err: (err as Error).message },
        'ALERT_WEBHOOK_URL could not be checked now (DNS): alerts try it when they are sent',
      );
    }
  }
  if (!config.runWorkers) return;
  const alertLog = log.child({ component: 'alerts' });
  configureAlerts(
    config.alertWebhookUrl && config.alertWebhookSecret
      ? { url: config.alertWebhookUrl, secret: config.alertWebhookSecret, policy: { allowPrivate: config.outboundAllowPrivate }, log: alertLog }
      : null,
    alertLog,
  );
  shutdown.add(() => stopAlerts());
}

/** Starts the embedded chain (when this process runs it) and makes every chain's runtime, in config order. */
export async function startChains({ config, log, core, shutdown }: Booting, opts: ChainsOptions): Promise<Chains> {
  let embedded: SupervisedChain | null = null;
  const runtimes: ChainRuntime[] = [];
  const runtimeDeps = {
    db: core.store.db,
    keys: core.keys,
    relayerCount: config.relayerCount,
    stuckSeconds: config.stuckSeconds,
    flush: () => core.store.flush(),
    rpcTimeoutMs: config.rpcTimeoutMs,
    remoteProviders: opts.remoteProviders,
  };
  for (const spec of opts.specs) {
    let rpcUrl: string;
    if (!spec.embedded) {
      rpcUrl = spec.rpc!;
    } else if (opts.embeddedRpcUrl) {
      rpcUrl = opts.embeddedRpcUrl; // the workers' thread: the main thread runs the embedded chain
    } else {
      // Automine only: a block per transaction and none while idle, so an idle chain does not grow. Blocks
      // that confirm others are needed only to wait for confirmations: then one a second.
      const chainOptions = {
        dataDir: config.dataDir,
        port: config.anvilPort,
        chainId: spec.id,
        logger: log.child({ component: 'anvil' }),
        blockTime: spec.confirmations > 0 ? 1 : undefined,
        nice: config.workerNice,
      };
      const chain = await startSupervisedChain(chainOptions, { log, signal: shutdown.signal, onFatal: opts.onFatal });
      embedded = chain;
      shutdown.add(() => chain.stop()); // whichever node runs then
      rpcUrl = chain.current.rpcUrl;
    }
    runtimes.push(new ChainRuntime(spec, rpcUrl, { ...runtimeDeps, log: log.child({ component: 'chain', chain: spec.id }) }));
  }
  return { runtimes, embedded };
}

/**
 * Brings the chains up. The embedded chain is ours: it must come up. An external chain that is down or
 * unfunded does not hold the start back: it comes up in the background, and /health says what it waits
 * for. A node that answers with another chain id stops the start.
 */
export async function bringUpChains({ config, log, core }: Booting, { runtimes, embedded }: Chains, embeddedRpcUrl?: string): Promise<void> {
  const { db } = core.store;
  // Which chains these are (their genesis, the embedded one's URL), for the CLI: recorded by whoever runs the chain or its workers.
  const identify = (rt: ChainRuntime) =>
    genesisHash(rt.client)
      .then((genesis) => recordChainIdentity(db, log, { id: rt.spec.id, embedded: rt.spec.embedded, rpcUrl: rt.rpcUrl, genesis }))
      .catch((err) => log.warn({ chain: rt.spec.id, err: (err as Error).message }, "could not record the chain's identity"));
  if (config.runWorkers) {
    await Promise.all(
      runtimes.map(async (rt) => {
        if (rt.spec.embedded) {
          await bringUp(rt, 60_000);
          if (!embeddedRpcUrl) await identify(rt); // the workers' thread leaves it to the thread that runs the chain
        } else {
          try {
            await rt.connect();
            await identify(rt);
            await bringUp(rt, 60_000);
          } catch (err) {
            if (err instanceof WrongChainError) throw err;
            log.warn({ chain: rt.spec.id, rpc: redactRpcUrl(rt.rpcUrl), err: (err as Error).message }, 'chain not available yet: its work waits for it');
          }
        }
        rt.startMonitor();
      }),
    );
    return;
  }
  // Without workers this process only reads the chains (health, explorer); it checks their ids.
  for (const rt of runtimes)
    await rt.connect().catch((err) => {
      if (err instanceof WrongChainError) throw err;
    });
  // The embedded chain this process started is funded here all the same: worker processes beside
  // it (API=false) reach it as an external chain, which they never fund.
  if (embedded) for (const rt of runtimes.filter((r) => r.spec.embedded)) await rt.fundEmbeddedAccounts();
  if (embedded) for (const rt of runtimes.filter((r) => r.spec.embedded)) await identify(rt);
  for (const rt of runtimes) {
    // The forwarder's address is fixed; the effects that need it are registered on the sender all the same.
    rt.refresh().then(
      () => undefined,
      () => undefined,
    );
  }
}

/**
 * The database's home chain: the chain every record was on before there were several (recorded in
 * `meta` by the first start). The embedded chain's state file does not remember its chain id, so an
 * embedded chain started with another CHAIN_ID than the one this database recorded for it is refused.
 */
export function checkHomeChain(home: number, config: Config): number {
  const embedded = config.chains.find((c) => c.embedded);
  if (embedded && embedded.id !== home && !config.chains.some((c) => c.id === home)) {
    throw new Error(
      `CHAIN_ID is ${embedded.id}, but this database (DATA_DIR / DATABASE_URL) belongs to chain ${home}; use a new DATA_DIR/DATABASE_URL for another chain`,
    );
  }
  return home;
}

/**
 * Steps a chain until it is ready or cannot go on without outside help (funds, the node). The embedded
 * chain is the service's own: killed or restarting meanwhile (its supervisor starts it again within
 * seconds, and the workers' thread may start while the main thread's chain does), it is waited for
 * until the deadline instead of failing the start.
 */
export async function bringUp(rt: Pick<ChainRuntime, 'step' | 'spec' | 'waitingFor' | 'forwarderAddress'>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ready = await rt.step().catch((err: unknown) => {
      if (!rt.spec.embedded || err instanceof WrongChainError || Date.now() > deadline) throw err;
      return null; // the node did not answer: tried again below
    });
    if (ready) return;
    if (ready === null) {
      await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    // Waiting for the forwarder's deployment is progress; an unfunded account is not.
    if (rt.waitingFor !== 'deploying the forwarder') return;
    if (Date.now() > deadline)
      throw new Error(`the forwarder contract at ${rt.forwarderAddress} did not appear on chain ${rt.spec.id} within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
