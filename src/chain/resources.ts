// What the roles of one chain share, below all of them: the database and the node, the relayer set,
// the fee market and the head, the in-flight accounting, the node's answers to broadcasts, and the one
// queue of broadcasts. The sender records and paces, the tracker follows transactions to their
// outcomes, the reconciler compares the record with the chain: each takes this one object, none calls
// another back. News between them (something sent, the record may disagree with the chain) goes
// through `news`, which the chain's runtime (owner of the loops) listens to.
import type { Logger } from 'pino';
import type { PublicClient } from 'viem';
import type { Db } from '../store/db.js';
import type { KeyRing } from './keys.js';
import type { ChainSigner } from './signer.js';
import { raise } from './alerts.js';
import { FeeOracle, type Head } from './fees.js';
import { DEFAULT_MAX_FEE_GWEI, TUNING_DEFAULTS, type ChainTuning } from './chains.js';
import { gweiToWei } from '../domain/fees.js';
import { InFlight } from './in-flight.js';
import { NodeAnswers } from './node-answers.js';
import { RelayerSet } from './relayer-set.js';
import { Broadcaster } from './broadcaster.js';
import { setDevBalance } from './dev-funding.js';

/** What each service account holds on the embedded chain: 100M of its currency, never running out. */
const EMBEDDED_FUNDS = 10n ** 26n;

/** Something one role tells the loops: a listener per kind of news. */
export class ChainNews {
  private readonly listeners = { sent: [] as (() => void)[], mayDisagree: [] as (() => void)[] };
  on(kind: keyof ChainNews['listeners'], fn: () => void): void {
    this.listeners[kind].push(fn);
  }
  /** A transaction is new on the node: its receipt is worth looking for now. */
  sent(): void {
    for (const fn of this.listeners.sent) fn();
  }
  /** A node answer says the record and the chain may disagree (a nonce used, earlier ones lost). */
  mayDisagree(): void {
    for (const fn of this.listeners.mayDisagree) fn();
  }
}

export interface ChainResourcesOptions {
  db: Db;
  client: PublicClient;
  keys: KeyRing;
  chainId: number;
  log: Logger;
  relayerCount: number;
  /** The service's own node: it mines on arrival and no backend of it lags. */
  embedded: boolean;
  confirmations: number;
  /** Wall-clock limit, only for a chain that stops producing blocks. */
  stuckMs?: number;
  /** The chain's fee and pacing settings (default: those of a chain configured without them). */
  tuning?: ChainTuning;
  /** Puts every commit so far on disk before anything is broadcast (SQLite's WAL). */
  flush: () => Promise<void>;
}

export class ChainResources {
  readonly db: Db;
  readonly client: PublicClient;
  readonly keys: KeyRing;
  readonly chainId: number;
  readonly log: Logger;
  readonly embedded: boolean;
  readonly confirmations: number;
  readonly stuckMs: number;
  readonly tuning: ChainTuning;
  /** The highest max fee per gas ever offered. */
  readonly ceiling: bigint;
  readonly news = new ChainNews();
  readonly inFlight = new InFlight();
  readonly answers: NodeAnswers;
  readonly relayerSet: RelayerSet;
  readonly fees: FeeOracle;
  readonly broadcaster: Broadcaster;
  private headReadAt = 0;
  private feeWaitAlerted = false;

  constructor(o: ChainResourcesOptions) {
    this.db = o.db;
    this.client = o.client;
    this.keys = o.keys;
    this.chainId = o.chainId;
    this.log = o.log;
    this.embedded = o.embedded;
    this.confirmations = o.confirmations;
    this.stuckMs = o.stuckMs ?? 60_000;
    this.tuning = o.tuning ?? { ...TUNING_DEFAULTS, maxFeeGwei: DEFAULT_MAX_FEE_GWEI };
    this.ceiling = gweiToWei(this.tuning.maxFeeGwei);
    const onSetError = (err: Error) => o.log.warn({ err: err.message }, 'cannot read the relayer set again: keeping the one loaded');
    this.relayerSet = new RelayerSet(o.db, o.keys, o.chainId, o.relayerCount, onSetError);
    this.fees = new FeeOracle(o.client, { ceiling: this.ceiling, minTip: gweiToWei(this.tuning.minTipGwei) }, { trustLowerHead: o.embedded });
    this.answers = new NodeAnswers(this.inFlight, o.log, { poke: () => this.news.sent(), reconcileSoon: () => this.news.mayDisagree() });
    this.broadcaster = new Broadcaster(o.db, o.client, this.answers, {
      flush: o.flush,
      sent: () => this.news.sent(),
      // The embedded chain mines a block per transaction unless it waits for confirmations (a block a second).
      mineTogether: o.embedded && o.confirmations === 0,
    });
  }

  /** The accounts whose transactions may be signed again (relayers of every state, and the deployer). */
  signers(): ChainSigner[] {
    return [...this.relayerSet.signers(), this.keys.deployer()];
  }

  /** Funds the service accounts on the embedded chain (anvil mints the funds): the chain is the service's own. */
  async fundEmbedded(): Promise<void> {
    const rpc = (method: string, params: unknown[]) => this.client.request({ method: method as any, params: params as any });
    for (const a of this.signers()) await setDevBalance(rpc, a.address, EMBEDDED_FUNDS);
  }

  /** Reads the head block (base fee, gas limit; the tip now and then). A new block may free room. */
  async readHead(): Promise<Head> {
    const { head, isNew } = await this.fees.refresh();
    this.headReadAt = Date.now();
    if (isNew) {
      this.inFlight.freed();
      this.alertOnFeeWait();
    }
    return head;
  }

  /** How long ago the head was last read (ms). */
  headAge(): number {
    return Date.now() - this.headReadAt;
  }

  /** One operator alert each time the chain's base fee rises over the ceiling (not every block of the wait). */
  private alertOnFeeWait(): void {
    const waiting = this.fees.waiting();
    if (waiting && !this.feeWaitAlerted) raise('chain.waiting_for_fees', { chain_id: this.chainId, reason: waiting });
    this.feeWaitAlerted = waiting !== null;
  }
}
