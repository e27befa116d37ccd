// One chain of a deployment at run time: its clients, the roles of its chain wing (sender, tracker,
// reconciler, over the resources they share), both of its loops, and its readiness. A chain comes up on
// its own schedule: an external chain that is down, or whose deployer or relayers have no funds, is
// simply not ready; its work waits while the other chains run, and it becomes ready as soon as it
// answers and is funded, without a restart.
//   monitor loop  connect, bootstrap (relayers, forwarder), judge readiness, watch balances and stuck transactions
//   tracker loop  compare the record with the chain when due (reconciler), follow transactions (tracker)
import type { Logger } from 'pino';
import type { Address, PublicClient } from 'viem';
import type { Db } from '../store/db.js';
import type { KeyRing } from './keys.js';
import type { OutcomeHandlers } from './outcomes.js';
import type { ChainSpec } from './chains.js';
import { fundingNeeds, judgeChain, type ChainReading, type ChainVerdict } from '../domain/chain-funding.js';
import { mergeSnapshots, type ProviderSet, type ProviderSnapshot } from './providers.js';
import type { ChainResources } from './resources.js';
import type { ChainSender } from './sender.js';
import type { ChainTracker } from './tracker.js';
import type { Reconciler } from './reconciler.js';
import { buildChainWing, initChainWing } from './wing.js';
import { WakeableLoop } from './loop.js';
import { FundingWatch } from './funding-watch.js';
import { StuckWatch } from './stuck-watch.js';
import { ForwarderBootstrap } from './forwarder-bootstrap.js';
import { chainClient, checkChainId, providerSetFor, WrongChainError } from './chain-client.js';
import { awaitingEvidence, chainHealth, type ChainHealth } from './health.js';
import { errMessage } from './node-answers.js';
import { OutageLog } from './outage-log.js';
import { MONITOR_PASS_MS, monitorStepEveryMs, NotReadyClock } from './monitor-pace.js';

export { WrongChainError } from './chain-client.js';
export type { ChainHealth } from './health.js';

export interface ChainRuntimeDeps {
  db: Db;
  keys: KeyRing;
  /** `log` already names the chain (a child logger with `chain`): its lines do not repeat it. */
  log: Logger;
  relayerCount: number;
  stuckSeconds: number;
  flush: () => Promise<void>;
  /** Per call and provider (a CHAINS entry's rpcTimeoutMs wins). */
  rpcTimeoutMs?: number;
  /** The same providers as seen by another thread of this process (the workers'), for /health and /metrics. */
  remoteProviders?: () => ProviderSnapshot[];
}

export class ChainRuntime {
  readonly client: PublicClient;
  /** For /health and the readiness checks: answers fast or not at all, so a dead node never stalls them. */
  private readonly probe: PublicClient;
  /** The chain's JSON-RPC providers (one for the embedded chain): calls fail over between them. */
  readonly providers: ProviderSet;
  readonly sender: ChainSender;
  private readonly res: ChainResources;
  private readonly tracker: ChainTracker;
  readonly reconciler: Reconciler;
  private readonly forwarderBootstrap: ForwarderBootstrap;
  private readonly funding: FundingWatch;
  private readonly stuck: StuckWatch;
  private readonly trackerLoop: WakeableLoop;
  private readonly monitorLoop: WakeableLoop;
  forwarder: Address | null = null;
  private verdict: ChainVerdict = { ready: false, reason: 'starting', accounts: [] };
  private initialised = false;
  private connected = false;
  private readyListeners: (() => void)[] = [];
  private forwarderListeners: ((f: Address) => void)[] = [];
  private lastMonitorError: string | null = null;
  /** A tracker pass that fails once is a warning; failing for 30 s on end, an error. */
  private readonly trackerFailures: OutageLog;
  private steppedAt = 0;
  /** How long the chain has been not ready for the same reason: it sets the monitor's pace. */
  private readonly notReady = new NotReadyClock();
  private readAt = 0;
  private fresh: Promise<unknown> | null = null;

  constructor(
    readonly spec: ChainSpec,
    readonly rpcUrl: string,
    private readonly deps: ChainRuntimeDeps,
  ) {
    this.providers = providerSetFor(spec, rpcUrl, deps.log);
    // The embedded node is this machine's own: a busy one is slow, not gone.
    const timeout = spec.embedded ? 15_000 : (spec.rpcTimeoutMs ?? deps.rpcTimeoutMs ?? 10_000);
    this.client = chainClient(spec, this.providers, timeout, 2);
    this.probe = chainClient(spec, this.providers, Math.min(timeout, 2_000), 0);
    ({ res: this.res, sender: this.sender, tracker: this.tracker, reconciler: this.reconciler } = buildChainWing(spec, this.client, this.providers, deps));
    this.forwarderBootstrap = new ForwarderBootstrap(deps.db, deps.keys, spec.id);
    this.trackerFailures = new OutageLog(deps.log, 'chain tracker', 30_000);
    this.funding = new FundingWatch(spec, this.probe, deps.log);
    this.stuck = new StuckWatch(deps.db, spec, deps.stuckSeconds);
    // A node mines a broadcast transaction within milliseconds (the embedded one on arrival): a
    // broadcast during a pass means receipts are waiting now, not a poll interval from now.
    this.trackerLoop = new WakeableLoop({ pass: () => this.trackPass(), idleMs: 250, onError: (err) => this.trackerFailed(err) });
    this.monitorLoop = new WakeableLoop({ pass: () => this.monitorPass(), idleMs: MONITOR_PASS_MS, onError: (err) => this.monitorFailed(err) });
    this.res.news.on('sent', () => this.trackerLoop.poke());
  }

  /** The forwarder's address: fixed by the deployer's first transaction, the same on every chain. */
  get forwarderAddress(): Address {
    return this.forwarderBootstrap.address;
  }

  get ready(): boolean {
    return this.verdict.ready;
  }

  /** What the chain waits for (null when ready). */
  get waitingFor(): string | null {
    return this.verdict.reason;
  }

  /** Called once the chain is ready for the first time (its forwarder exists, its relayers are funded). */
  onFirstReady(cb: () => void): void {
    this.readyListeners.push(cb);
  }

  /** Called once the forwarder is known (before the first readiness). */
  onForwarder(cb: (f: Address) => void): void {
    this.forwarderListeners.push(cb);
  }

  /**
   * The outcome handlers, one per kind. Until they are given (they need the chain's forwarder), mined
   * transactions wait unapplied: a later pass applies them.
   */
  useOutcomes(handlers: OutcomeHandlers): void {
    this.tracker.useOutcomes(handlers);
  }

  /** Checks the chain id once; a node that answers with another id is a configuration error. */
  async connect(): Promise<void> {
    if (this.connected) return;
    await checkChainId(this.client, this.providers, this.spec, this.rpcUrl);
    this.connected = true;
  }

  /**
   * One step of bringing the chain up: connect, register the relayers and reconcile (once), deploy the
   * forwarder when the deployer can pay, then judge readiness. Returns whether it is ready; throws what
   * the node threw (an outage: the caller tries again later).
   */
  async step(): Promise<boolean> {
    await this.connect();
    if (!this.initialised) {
      await initChainWing({ res: this.res, reconciler: this.reconciler }, this.deps.relayerCount);
      this.trackerLoop.start();
      this.initialised = true;
    }
    if (!this.forwarder) {
      if (await this.forwarderBootstrap.deployed(this.client)) {
        this.forwarder = this.forwarderBootstrap.address;
        this.deps.log.info({ forwarder: this.forwarder }, 'forwarder contract ready');
        for (const cb of this.forwarderListeners) cb(this.forwarder);
      } else {
        await this.forwarderBootstrap.deploy(this.client, this.sender);
      }
    }
    const wasReady = this.verdict.ready;
    // Ready only once the forwarder's listeners ran (its code may appear between the check above and this reading).
    await this.refresh();
    if (this.verdict.ready && !wasReady) this.deps.log.info({ name: this.spec.name }, 'chain ready');
    if (this.verdict.ready) {
      const first = this.readyListeners.splice(0);
      for (const cb of first) cb();
    } else if (wasReady) {
      this.deps.log.warn({ reason: this.verdict.reason }, 'chain not ready: its work waits');
    }
    return this.verdict.ready;
  }

  /**
   * The embedded chain is the service's own: its deployer and relayers get funds there (anvil mints
   * them), whichever process started it, with or without workers.
   */
  fundEmbeddedAccounts(): Promise<void> {
    return this.res.fundEmbedded();
  }

  /** Keeps stepping in the background: often while not ready, now and then once ready (funds run out). */
  startMonitor(): void {
    this.monitorLoop.start();
  }

  async stop(): Promise<void> {
    await this.monitorLoop.stop();
    await this.trackerLoop.stop();
    await this.sender.close();
  }

  /** One pass of the tracker loop: the reconciler when due, then the tracker. */
  private async trackPass(): Promise<void> {
    if (this.reconciler.due()) await this.reconciler.run();
    this.reconciler.forget(await this.tracker.trackOnce());
    this.trackerFailures.worked();
  }

  private trackerFailed(err: unknown): void {
    this.trackerFailures.failed(errMessage(err));
  }

  /**
   * One pass of the monitor loop. The chain is read again at the pace of monitor-pace.ts (a ready chain
   * every 5 s); a ready chain's stuck transactions are looked at every pass, so an alert follows
   * CHAIN_STUCK_SECONDS closely (one stuck for a few seconds is not missed).
   */
  private async monitorPass(): Promise<void> {
    const now = Date.now();
    if (now - this.steppedAt >= monitorStepEveryMs(this.verdict.ready, this.notReady.forMs(now))) {
      this.steppedAt = now; // a step that fails counts too: an outage is tried again at the same pace
      await this.step();
      this.notReady.note(this.verdict.ready, this.verdict.reason);
    }
    this.lastMonitorError = null;
    if (this.verdict.ready) await this.stuck.check();
  }

  private monitorFailed(err: unknown): void {
    const message = (err as Error).message;
    if (message !== this.lastMonitorError) this.deps.log.warn({ err: message }, 'chain not available, trying again');
    this.lastMonitorError = message;
    this.verdict = { ...this.verdict, ready: false, reason: err instanceof WrongChainError ? message : 'chain unreachable' };
    this.notReady.note(false, this.verdict.reason);
  }

  /** Reads the chain (fast, bounded) and judges it with the same rule as /health. */
  async refresh(): Promise<ChainVerdict> {
    let [reading, lowWei] = await Promise.all([this.reading(), this.funding.lowBalanceWei()]);
    // The embedded chain is the service's own: an account short there (the chain restarted from an
    // older saved state) is funded again, not reported.
    if (this.spec.embedded && reading.reachable && fundingNeeds(reading).length) {
      await this.fundEmbeddedAccounts().catch(() => {});
      reading = await this.reading();
    }
    if (reading.reachable) this.funding.say(reading);
    const verdict = judgeChain(reading, lowWei);
    this.verdict = verdict.ready && !this.forwarder && this.initialised ? { ...verdict, ready: false, reason: 'deploying the forwarder' } : verdict;
    this.readAt = Date.now();
    if (this.initialised) this.funding.watch(verdict, lowWei);
    return this.verdict;
  }

  /** The providers as this thread and the workers' thread saw them. */
  providerSnapshot(): ProviderSnapshot[] {
    const remote = (this.deps.remoteProviders?.() ?? []).filter((p) => p.chain_id === this.spec.id);
    return mergeSnapshots(this.providers.snapshot(), remote);
  }

  /**
   * Whether the chain is ready, judged from a reading at most `maxAgeMs` old (read again otherwise):
   * work about to be sent learns of an outage or an empty relayer within that time.
   */
  async readyNow(maxAgeMs: number): Promise<boolean> {
    if (Date.now() - this.readAt > maxAgeMs && this.forwarder) {
      this.fresh ??= this.refresh()
        .catch(() => this.verdict)
        .finally(() => (this.fresh = null));
      await this.fresh;
    }
    return this.verdict.ready;
  }

  private reading(): Promise<ChainReading> {
    const relayers = this.sender.relayers.map((r) => r.address);
    return this.funding.reading(this.deps.keys.deployer().address, relayers, this.forwarder ? null : this.forwarderBootstrap);
  }

  /** What /health shows of this chain. */
  health(restarting = false): Promise<ChainHealth> {
    return chainHealth(
      {
        spec: this.spec,
        probe: this.probe,
        lowBalanceWei: () => this.funding.lowBalanceWei(),
        reading: () => this.reading(),
        providers: () => this.providerSnapshot(),
        awaitingEvidence: () => awaitingEvidence(this.deps.db, this.spec.id),
      },
      restarting,
    );
  }
}
