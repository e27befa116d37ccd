// One chain of a deployment at run time: its clients, its sender (relayer nonce streams, fees,
// confirmations, stuck-transaction replacement, rewind handling) and its readiness. A chain comes up on
// its own schedule: an external chain that is down, or whose deployer or relayers have no funds, is
// simply not ready; its work waits while the other chains run, and it becomes ready as soon as it
// answers and is funded, without a restart.
import type { Logger } from 'pino';
import { createPublicClient, defineChain, getContractAddress, http, type Address, type PublicClient } from 'viem';
import type { Db } from '../store/db.js';
import type { KeyRing } from './keys.js';
import { ChainSender } from './sender.js';
import { FORWARDER_DEPLOY_TX } from './outcomes.js';
import { artifact } from './artifacts.js';
import type { ChainSpec } from './chains.js';
import { judgeChain, type AccountReading, type ChainVerdict } from '../domain/chain-funding.js';
import { sleepUnlessWoken } from '../util/time.js';
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
}

export class WrongChainError extends Error {}

function clientFor(spec: ChainSpec, rpcUrl: string, timeout: number, retryCount: number): PublicClient {
  return createPublicClient({
    chain: defineChain({ id: spec.id, name: spec.name, nativeCurrency: { name: spec.currency, symbol: spec.currency, decimals: 18 }, rpcUrls: { default: { http: [rpcUrl] } } }),
    transport: http(rpcUrl, { timeout, retryCount }),
    pollingInterval: 250,
  }) as PublicClient;
}

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

  constructor(
    readonly spec: ChainSpec,
    readonly rpcUrl: string,
    private readonly deps: { db: Db; keys: KeyRing; log: Logger; relayerCount: number; stuckSeconds: number; flush: () => Promise<void> },
  ) {
    this.client = clientFor(spec, rpcUrl, 15_000, 2);
    this.probe = clientFor(spec, rpcUrl, 2_000, 0);
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
    if (id !== this.spec.id) throw new WrongChainError(`the chain at ${this.rpcUrl} has chain id ${id}, but it is configured as chain ${this.spec.id} (${this.spec.embedded ? 'CHAIN_ID' : this.spec.rpc ? 'CHAINS / CHAIN_ID' : 'CHAINS'})`);
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
        this.deps.log.info({ forwarder: this.forwarder, chain: this.spec.id }, 'forwarder contract ready');
        for (const cb of this.forwarderListeners) cb(this.forwarder);
      } else {
        await this.deployForwarder();
      }
    }
    const wasReady = this.verdict.ready;
    // Ready only once the forwarder's listeners ran (its code may appear between the check above and this reading).
    await this.refresh();
    if (this.verdict.ready && !wasReady) this.deps.log.info({ chain: this.spec.id, name: this.spec.name }, 'chain ready');
    if (this.verdict.ready) {
      const first = this.readyListeners.splice(0);
      for (const cb of first) cb();
    } else if (wasReady) {
      this.deps.log.warn({ chain: this.spec.id, reason: this.verdict.reason }, 'chain not ready: its work waits');
    }
    return this.verdict.ready;
  }

  /** Keeps stepping in the background: often while not ready, now and then once ready (funds run out). */
  startMonitor(): void {
    this.running = true;
    this.loopDone = (async () => {
      while (this.running) {
        try {
          await this.step();
          this.lastError = null;
        } catch (err) {
          const message = (err as Error).message;
          if (message !== this.lastError) this.deps.log.warn({ chain: this.spec.id, err: message }, 'chain not available, trying again');
          this.lastError = message;
          this.verdict = { ...this.verdict, ready: false, reason: err instanceof WrongChainError ? message : 'chain unreachable' };
        }
        await sleepUnlessWoken(this.verdict.ready ? 5000 : 1000, (w) => (this.wake = w));
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
    const verdict = judgeChain(await this.reading());
    this.verdict = verdict.ready && !this.forwarder && this.initialised ? { ...verdict, ready: false, reason: 'deploying the forwarder' } : verdict;
    this.readAt = Date.now();
    return this.verdict;
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

  private async hasForwarderCode(client: PublicClient = this.client): Promise<boolean> {
    return ((await client.getCode({ address: this.forwarderAddress })) ?? '0x') !== '0x';
  }

  private async reading() {
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
    const [block, verdict] = await Promise.all([this.probe.getBlock({ blockTag: 'latest' }).catch(() => null), this.reading().then(judgeChain)]);
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
    };
  }

  /**
   * The forwarder is the deployer's first transaction on each chain, recorded once and broadcast; the
   * tracker follows it. A deployer without funds leaves the chain waiting (reported by /health).
   */
  private async deployForwarder(): Promise<void> {
    const { db, keys } = this.deps;
    const recorded = await db.selectFrom('chain_txs').select('id').where('kind', '=', FORWARDER_DEPLOY_TX).where('chain_id', '=', this.spec.id).executeTakeFirst();
    if (recorded) return;
    const deployer = keys.deployer();
    const nonce = await this.client.getTransactionCount({ address: deployer.address });
    if (nonce !== 0) throw new WrongChainError(`the deployer account ${deployer.address} has been used on chain ${this.spec.id} (nonce ${nonce}) but holds no forwarder: this chain does not belong to this installation's seed`);
    if ((await this.client.getBalance({ address: deployer.address })) === 0n) return; // waits for funds
    const { bytecode } = artifact('MintworksForwarder');
    const row = await db.transaction().execute((tx) => this.sender.record(tx, { kind: FORWARDER_DEPLOY_TX, ref: 'forwarder', payload: {}, to: null, data: bytecode, gas: 3_000_000n, signer: deployer }));
    await this.sender.broadcast([row]);
  }
}
