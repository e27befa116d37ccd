// One chain of a deployment at run time: its clients, its sender (relayer nonce streams, fees,
// confirmations, stuck-transaction replacement, rewind handling) and its readiness. A chain comes up on
// its own schedule: an external chain that is down, or whose deployer or relayers have no funds, is
// simply not ready; its work waits while the other chains run, and it becomes ready as soon as it
// answers and is funded, without a restart.
import type { Logger } from 'pino';
import { sql } from 'kysely';
import { createPublicClient, defineChain, getContractAddress, type Address, type PublicClient } from 'viem';
import type { Db } from '../store/db.js';
import type { KeyRing } from './keys.js';
import { ChainSender } from './sender.js';
import { FORWARDER_DEPLOY_TX } from './outcomes.js';
import { artifact } from './artifacts.js';
import { rpcUrlsOf, type ChainSpec } from './chains.js';
import {
  fundingNeeds,
  judgeChain,
  LOW_BALANCE_WEI,
  lowBalanceThreshold,
  median,
  type AccountReading,
  type ChainReading,
  type ChainVerdict,
} from '../domain/chain-funding.js';
import { sleepUnlessWoken } from '../util/time.js';
import { mergeSnapshots, providerHealth, ProviderSet, redactRpcUrl, type ProviderSnapshot } from './providers.js';
import { raise } from './alerts.js';

const formatEther = (wei: string) => {
  const w = BigInt(wei);
  const whole = w / 10n ** 18n;
  const frac = (w % 10n ** 18n).toString().padStart(18, '0').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : whole.toString();
};

import { feeWait as waitingOn, gweiToWei, nextBaseFee } from '../domain/fees.js';

/** Why nothing new is sent on a chain whose latest block is `block`, against `ceiling`: the rule the sender applies. */
function waitingForFees(block: { baseFeePerGas: bigint | null; gasUsed: bigint; gasLimit: bigint }, ceiling: bigint): string | null {
  if (block.baseFeePerGas == null) return null;
  return waitingOn(nextBaseFee({ baseFeePerGas: block.baseFeePerGas, gasUsed: block.gasUsed, gasLimit: block.gasLimit }), ceiling);
}

export interface ChainHealth {
  chain_id: number;
  name: string;
  embedded: boolean;
  ready: boolean;
  block: number | null;
  accounts: { address: string; role: 'deployer' | 'relayer'; balance_wei: string | null; low: boolean }[];
  /** `ok`, or what the chain waits for (unreachable, which account to fund, the forwarder's deployment). */
  status: string;
  /** Under this balance a relayer is `low` (wei, decimal). */
  low_balance_wei: string;
  /** The chain's JSON-RPC providers, in order of preference (the embedded chain's own node included). */
  providers: ReturnType<typeof providerHealth>[];
}

export class WrongChainError extends Error {}

function clientFor(spec: ChainSpec, providers: ProviderSet, timeoutMs: number, retryCount: number): PublicClient {
  return createPublicClient({
    chain: defineChain({
      id: spec.id,
      name: spec.name,
      nativeCurrency: { name: spec.currency, symbol: spec.currency, decimals: 18 },
      rpcUrls: { default: { http: [providers.primaryUrl] } },
    }),
    transport: providers.transport({ timeoutMs, retryCount }),
    pollingInterval: 250,
  }) as PublicClient;
}

/** `handled = 0` as a literal: the planner then uses the partial index of unhandled transactions. */
const UNHANDLED = sql.lit(0);

/** How often the low-balance threshold follows the fees (from the median base fee of recent blocks). */
const THRESHOLD_EVERY_MS = 60_000;

export class ChainRuntime {
  readonly client: PublicClient;
  /** For /health and the readiness checks: answers fast or not at all, so a dead node never stalls them. */
  private readonly probe: PublicClient;
  readonly sender: ChainSender;
  /** The forwarder's address: fixed by the deployer's first transaction, the same on every chain. */
  readonly forwarderAddress: Address;
  forwarder: Address | null = null;
  private verdict: ChainVerdict = { ready: false, reason: 'starting', accounts: [] };
  private initialised = false;
  private connected = false;
  private readyListeners: (() => void)[] = [];
  private forwarderListeners: ((f: Address) => void)[] = [];
  private running = false;
  private loopDone: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private lastError: string | null = null;
  private readAt = 0;
  private fresh: Promise<unknown> | null = null;
  /** Accounts said to be short (address -> balance said): each is said once, and again only when it changes. */
  private short = new Map<string, string>();
  /** The chain's JSON-RPC providers (one for the embedded chain): calls fail over between them. */
  readonly providers: ProviderSet;
  private lowWei: { value: bigint; at: number } | null = null;
  /** Relayers reported low (one warning and one alert per crossing). */
  private readonly lowRelayers = new Set<string>();
  /** Transactions already reported stuck. */
  private readonly reportedStuck = new Set<number>();

  constructor(
    readonly spec: ChainSpec,
    readonly rpcUrl: string,
    /** `log` already names the chain (a child logger with `chain`): its lines do not repeat it. */
    private readonly deps: {
      db: Db;
      keys: KeyRing;
      log: Logger;
      relayerCount: number;
      stuckSeconds: number;
      flush: () => Promise<void>;
      /** Per call and provider (a CHAINS entry's rpcTimeoutMs wins). */
      rpcTimeoutMs?: number;
      /** The same providers as seen by another thread of this process (the workers'), for /health and /metrics. */
      remoteProviders?: () => ProviderSnapshot[];
    },
  ) {
    const urls = spec.embedded ? [rpcUrl] : rpcUrlsOf(spec).length ? rpcUrlsOf(spec) : [rpcUrl];
    this.providers = new ProviderSet(spec.id, urls, {
      onStateChange: (p, previous) => {
        if (p.state === 'down')
          raise('chain.provider_down', { chain_id: spec.id, chain: spec.name, provider: p.provider, last_error: p.last_error, providers: urls.length });
        else if (p.state === 'up' && previous === 'down') deps.log.info({ provider: p.provider }, 'JSON-RPC provider answers again');
        else if (p.state === 'rate_limited') deps.log.debug({ provider: p.provider, retryAt: p.retry_at }, 'JSON-RPC provider rate limited');
      },
    });
    // The embedded node is this machine's own: a busy one is slow, not gone.
    const timeout = spec.embedded ? 15_000 : (spec.rpcTimeoutMs ?? deps.rpcTimeoutMs ?? 10_000);
    this.client = clientFor(spec, this.providers, timeout, 2);
    this.probe = clientFor(spec, this.providers, Math.min(timeout, 2_000), 0);
    this.sender = new ChainSender(deps.db, this.client, deps.keys, spec.id, deps.log, {
      relayerCount: deps.relayerCount,
      embedded: spec.embedded,
      confirmations: spec.confirmations,
      stuckMs: deps.stuckSeconds * 1000,
      tuning: spec,
      flush: deps.flush,
    });
    this.forwarderAddress = getContractAddress({ from: deps.keys.deployer().address, nonce: 0n });
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

  /** Checks the chain id once; a node that answers with another id is a configuration error. */
  async connect(): Promise<void> {
    if (this.connected) return;
    const id = await this.client.getChainId();
    const where = this.spec.embedded ? 'CHAIN_ID' : this.spec.rpc ? 'CHAINS / CHAIN_ID' : 'CHAINS';
    if (id !== this.spec.id)
      throw new WrongChainError(`the chain at ${redactRpcUrl(this.rpcUrl)} has chain id ${id}, but it is configured as chain ${this.spec.id} (${where})`);
    // Every provider must serve this chain: one of another chain would get its transactions refused, or its reads wrong.
    if (this.providers.size > 1) {
      for (const { provider, result } of await this.providers.onEach({ method: 'eth_chainId' }, 5000)) {
        if (result !== null && Number(result) !== this.spec.id)
          throw new WrongChainError(`the provider ${provider} of chain ${this.spec.id} serves chain id ${Number(result)} (${where})`);
      }
    }
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
      await this.sender.init();
      this.sender.start();
      this.initialised = true;
    }
    if (!this.forwarder) {
      if (await this.hasForwarderCode()) {
        this.forwarder = this.forwarderAddress;
        this.deps.log.info({ forwarder: this.forwarder }, 'forwarder contract ready');
        for (const cb of this.forwarderListeners) cb(this.forwarder);
      } else {
        await this.deployForwarder();
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

  /** Keeps stepping in the background: often while not ready, now and then once ready (funds run out). */
  startMonitor(): void {
    this.running = true;
    this.loopDone = (async () => {
      let steppedAt = 0;
      while (this.running) {
        try {
          // A ready chain is read every 5 s; its stuck transactions are looked at every second, so an
          // alert follows CHAIN_STUCK_SECONDS closely (one stuck for a few seconds is not missed).
          if (!this.verdict.ready || Date.now() - steppedAt >= 5000) {
            await this.step();
            steppedAt = Date.now();
          }
          this.lastError = null;
          if (this.verdict.ready) await this.watchStuck();
        } catch (err) {
          const message = (err as Error).message;
          if (message !== this.lastError) this.deps.log.warn({ err: message }, 'chain not available, trying again');
          this.lastError = message;
          this.verdict = { ...this.verdict, ready: false, reason: err instanceof WrongChainError ? message : 'chain unreachable' };
        }
        await sleepUnlessWoken(1000, (w) => (this.wake = w));
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loopDone;
    if (this.initialised) await this.sender.stop();
  }

  /** Reads the chain (fast, bounded) and judges it with the same rule as /health. */
  async refresh(): Promise<ChainVerdict> {
    let [reading, lowWei] = await Promise.all([this.reading(), this.lowBalanceWei()]);
    // The embedded chain is the service's own: an account short there (the chain restarted from an
    // older saved state) is funded again, not reported.
    if (this.spec.embedded && reading.reachable && fundingNeeds(reading).length) {
      await this.sender.fundEmbeddedAccounts().catch(() => {});
      reading = await this.reading();
    }
    if (reading.reachable) this.sayFunding(reading);
    const verdict = judgeChain(reading, lowWei);
    this.verdict = verdict.ready && !this.forwarder && this.initialised ? { ...verdict, ready: false, reason: 'deploying the forwarder' } : verdict;
    this.readAt = Date.now();
    if (this.initialised) this.watchBalances(verdict, lowWei);
    return this.verdict;
  }

  /**
   * Under this a relayer is `low`: the CHAINS entry's lowBalanceWei, else about 1,000 mints' worth at
   * the median base fee of the last 20 blocks plus the tip (read at most once a minute).
   */
  async lowBalanceWei(): Promise<bigint> {
    if (this.spec.lowBalanceWei !== undefined) return this.spec.lowBalanceWei;
    if (this.lowWei && Date.now() - this.lowWei.at < THRESHOLD_EVERY_MS) return this.lowWei.value;
    const history = await this.probe.getFeeHistory({ blockCount: 20, rewardPercentiles: [50] }).catch(() => null);
    const base = history ? median(history.baseFeePerGas) : null;
    const tip = history ? median(history.reward?.map((r) => r[0]) ?? []) : null;
    const value = lowBalanceThreshold(base === null ? null : base + (tip ?? 0n));
    if (history) this.lowWei = { value, at: Date.now() };
    return value;
  }

  /** One warning and one operator alert when a relayer's balance falls under the threshold; quiet until it is funded again. */
  private watchBalances(verdict: ChainVerdict, lowWei: bigint): void {
    for (const a of verdict.accounts) {
      if (a.role !== 'relayer' || a.balance_wei === null) continue;
      if (a.low && !this.lowRelayers.has(a.address)) {
        this.lowRelayers.add(a.address);
        raise('relayer.balance_low', {
          chain_id: this.spec.id,
          chain: this.spec.name,
          relayer: a.address,
          balance_wei: a.balance_wei,
          threshold_wei: lowWei.toString(),
        });
      } else if (!a.low && this.lowRelayers.delete(a.address)) {
        this.deps.log.info({ relayer: a.address, balanceWei: a.balance_wei }, 'relayer funded again');
      }
    }
  }

  /**
   * Transactions unmined for longer than CHAIN_STUCK_SECONDS since they were recorded: one operator
   * alert each (the sender replaces them meanwhile; the alert says someone may need to look).
   */
  private async watchStuck(): Promise<void> {
    const since = Date.now() - this.deps.stuckSeconds * 1000;
    const rows = await this.deps.db
      .selectFrom('chain_txs')
      .select(['id', 'kind', 'from_address', 'nonce', 'hash', 'bumps', 'created_at'])
      .where('chain_id', '=', this.spec.id)
      .where('handled', '=', UNHANDLED)
      .where('status', 'in', ['signed', 'sent'])
      .where('created_at', '<', since)
      .orderBy('created_at')
      .limit(20)
      .execute();
    for (const r of rows) {
      if (this.reportedStuck.has(r.id)) continue;
      this.reportedStuck.add(r.id);
      raise('chain.tx_stuck', {
        chain_id: this.spec.id,
        chain: this.spec.name,
        tx: r.id,
        kind: r.kind,
        from: r.from_address,
        nonce: r.nonce,
        hash: r.hash,
        replacements: r.bumps,
        age_s: Math.round((Date.now() - r.created_at) / 1000),
      });
    }
    if (this.reportedStuck.size > 10_000) this.reportedStuck.clear();
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

  /** One line per account that is short (at start and when it becomes short), one when it is funded. */
  private sayFunding(reading: ChainReading): void {
    const needs = fundingNeeds(reading);
    const now = new Set(needs.map((n) => n.address));
    for (const n of needs) {
      if (this.short.get(n.address) === n.balance_wei) continue;
      this.short.set(n.address, n.balance_wei);
      this.deps.log.warn(
        { address: n.address, role: n.role, balance_wei: n.balance_wei, needs_wei: n.needs_wei },
        `fund ${n.role} ${n.address} on chain ${this.spec.id} (${this.spec.name}): balance ${formatEther(n.balance_wei)}, needs at least ${formatEther(LOW_BALANCE_WEI.toString())} ${this.spec.currency}: ${n.why}` +
          ` (on a development chain: mintworks chain fund --chain ${this.spec.id})`,
      );
    }
    for (const address of [...this.short.keys()]) {
      if (now.has(address)) continue;
      this.short.delete(address);
      this.deps.log.info({ address }, 'account funded');
    }
  }

  private async hasForwarderCode(client: PublicClient = this.client): Promise<boolean> {
    return ((await client.getCode({ address: this.forwarderAddress })) ?? '0x') !== '0x';
  }

  private async reading(): Promise<ChainReading> {
    const deployer = this.deps.keys.deployer().address;
    const accounts: { address: string; role: 'deployer' | 'relayer' }[] = [
      { address: deployer, role: 'deployer' },
      ...this.sender.relayers.map((r) => ({ address: r.address, role: 'relayer' as const })),
    ];
    const balance = (a: string) => this.probe.getBalance({ address: a as Address }).catch(() => null);
    const [readings, code] = await Promise.all([
      Promise.all(accounts.map(async (a): Promise<AccountReading> => ({ ...a, balance: await balance(a.address) }))),
      this.forwarder ? Promise.resolve(true) : this.hasForwarderCode(this.probe).catch(() => null),
    ]);
    const reachable = code !== null && readings.some((r) => r.balance !== null);
    return { reachable, forwarderDeployed: code === true, accounts: readings };
  }

  /** What /health shows of this chain. */
  async health(restarting = false): Promise<ChainHealth> {
    const lowWei = await this.lowBalanceWei();
    const [block, verdict] = await Promise.all([
      this.probe.getBlock({ blockTag: 'latest' }).catch(() => null),
      this.reading().then((r) => judgeChain(r, lowWei)),
    ]);
    const ready = !restarting && block !== null && verdict.ready;
    // Read here, not from the sender: the workers (and their sender) may run in another thread.
    const feeWait = block ? waitingForFees(block, gweiToWei(this.spec.maxFeeGwei)) : null;
    return {
      chain_id: this.spec.id,
      name: this.spec.name,
      embedded: this.spec.embedded,
      ready,
      block: block === null ? null : Number(block.number),
      accounts: verdict.accounts,
      status: restarting ? 'chain restarting' : block === null ? 'chain unreachable' : !ready ? (verdict.reason ?? 'not ready') : (feeWait ?? 'ok'),
      low_balance_wei: lowWei.toString(),
      providers: this.providerSnapshot().map(providerHealth),
    };
  }

  /**
   * The forwarder is the deployer's first transaction on each chain, recorded once and broadcast; the
   * tracker follows it. A deployer without funds leaves the chain waiting (reported by /health).
   */
  private async deployForwarder(): Promise<void> {
    const { db, keys } = this.deps;
    const recorded = await db
      .selectFrom('chain_txs')
      .select('id')
      .where('kind', '=', FORWARDER_DEPLOY_TX)
      .where('chain_id', '=', this.spec.id)
      .executeTakeFirst();
    if (recorded) return;
    const deployer = keys.deployer();
    const nonce = await this.client.getTransactionCount({ address: deployer.address });
    if (nonce !== 0)
      throw new WrongChainError(
        `the deployer account ${deployer.address} has been used on chain ${this.spec.id} (nonce ${nonce}) but holds no forwarder: this chain does not belong to this installation's seed`,
      );
    if ((await this.client.getBalance({ address: deployer.address })) === 0n) return; // waits for funds
    const { bytecode } = artifact('MintworksForwarder');
    const row = await db
      .transaction()
      .execute((tx) =>
        this.sender.record(tx, { kind: FORWARDER_DEPLOY_TX, ref: 'forwarder', payload: {}, to: null, data: bytecode, gas: 3_000_000n, signer: deployer }),
      );
    await this.sender.broadcast([row]);
  }
}
