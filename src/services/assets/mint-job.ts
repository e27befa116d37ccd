// The mint job: accepted assets are minted in batches (one chain transaction for many assets of a
// collection); their outcome, confirmed from the receipt's Transfer logs, is applied in mint-outcome.ts.
import type { Address, Hex } from 'viem';
import type { ChainCtx } from '../context.js';
import type { ClaimedJob, Job } from '../../jobs/queue.js';
import type { JobHandler } from '../../jobs/worker.js';
import { commitOf, type GroupCommit } from '../../store/db.js';
import { writeTurns } from '../../store/write-turns.js';
import { insertRows } from '../../store/inserts.js';
import type { ChainTxRow } from '../../chain/sender.js';
import { MINT_TX, type MintItem, type OutcomePayloads } from '../../chain/outcomes.js';
import { nowIso } from '../../util/time.js';
import { MintGasMeter, mintBatchCalldata, mintGasFor, type MintItem as MintCall } from '../../chain/token-uri.js';
import { requestWallets } from '../users/wallets.js';
import { MINT_JOB, WALLET_JOB } from '../../jobs/kinds.js';
import { inFlightMintOf } from './in-flight-mints.js';
import { deferUntilDeployed } from '../collections/contract-deploy.js';

/**
 * Claims whose broadcast may still be under way when the next claim is made. While the node mines one
 * batch, the next is claimed and signed. With one ahead, the thread had signed it before the node had
 * mined, and sat idle until the block came (a tenth of a 5,000-asset drain); with two, it claims and
 * signs the batch after meanwhile.
 */
const BROADCASTS_AHEAD = 2;

/** How long a mint waits for its user's wallet at most: the wallet job wakes it as soon as it exists. */
const WALLET_WAIT_MS = 5000;
/** Some chains cap a single transaction's gas at 2^24 (EIP-7825) whatever the block allows. */
const MAX_TX_GAS = 16_000_000;
/**
 * How long a claim or a transaction waits for room in the chain's block share (a slot of a relayer, gas
 * the next block can take): about a block on a slow chain, well inside the jobs' lease.
 */
const ROOM_WAIT_MS = 3000;
/** Jobs that found no room within ROOM_WAIT_MS are looked at again after this. */
const NO_ROOM_DEFER_MS = 500;
/** The least gas worth a mint transaction of its own while the block share is nearly taken. */
const MIN_TX_GAS = 1_000_000n;
const bigMin = (a: bigint, b: bigint) => (a < b ? a : b);
/** Gas limit per token before any mint was sized (recipients spread: a new holder for most tokens). */
const FIRST_GAS_PER_TOKEN = 60_000;

/**
 * Mints claimed jobs: the ready ones are split per collection into chain transactions sized by gas (not a
 * fixed count), each recorded with its assets and jobs in one transaction of three statements, then all
 * broadcast. Transactions take the room the chain gives (the block gas share, relayer slots): with a
 * backlog, each block gets its share of gas until the backlog is gone, and a claim takes about what
 * fits, so jobs are not held while earlier blocks are mined.
 */
export function mintJobHandler(ctx: ChainCtx): JobHandler<typeof MINT_JOB> {
  const sender = ctx.sender;
  const perTx = ctx.config.mintBatchSize;
  const batchSize = perTx * Math.max(1, sender.relayers.length) * 2;
  /** The broadcasts of the claims before this one, oldest first (at most BROADCASTS_AHEAD). */
  const broadcasts: Promise<unknown>[] = [];
  const sizing: MintSizing = { gasPerToken: FIRST_GAS_PER_TOKEN, meterPerGas: 1 };
  /** As many jobs as the room of the chain's next block takes (at least one transaction's worth). */
  const fitting = async (): Promise<number> => {
    await sender.waitForRoom(BigInt(sizing.gasPerToken), ROOM_WAIT_MS);
    if (!sender.paced) return batchSize;
    const { gas } = sender.room();
    return Math.max(1, Math.min(batchSize, Math.floor(Number(gas) / sizing.gasPerToken)));
  };
  return {
    kind: MINT_JOB,
    batchSize,
    leaseMs: 10_000, // short: a crashed worker's mints are picked up again soon
    pollMs: 500,
    lingerMs: 50, // a burst of creates shares mintBatch transactions instead of one each
    // While a burst of creates is written in this process, minting waits for it (at most MINT_YIELD_MS),
    // and while the burst goes on it takes one transaction's worth per wait: the burst keeps the CPU,
    // minting still moves, and the backlog is minted at full speed once the burst pauses.
    async beforeClaim() {
      const yielded = ctx.config.mintYieldMs > 0 && (await writeTurns().afterBurst(ctx.config.mintYieldMs)) ? perTx : batchSize;
      return Math.min(yielded, await fitting());
    },
    async handle(jobs) {
      const ready = await readyByCollection(ctx, jobs);
      const run = new MintRun(ctx, sizing, perTx);
      try {
        for (const [collectionUid, g] of ready) await run.recordGroup(collectionUid, g);
      } finally {
        // What is recorded is committed: it goes out even when a later transaction of the claim failed.
        run.sendRecorded();
      }
      if (run.waiting.length) await ctx.queue.deferMany(ctx.db, run.waiting, NO_ROOM_DEFER_MS);
      // A few batches ahead at most: a backlog is not all signed and held in memory ahead of the node.
      broadcasts.push(Promise.all(run.sends));
      if (broadcasts.length > BROADCASTS_AHEAD) await broadcasts.shift();
    },
  };
}

/** What the handler learns from each transaction for the next claim and the next transaction's size. */
interface MintSizing {
  /** The gas limit per token of the last mint transaction. */
  gasPerToken: number;
  /** The meter's gas per signed gas limit of the last mint transaction (see estimatedGas). */
  meterPerGas: number;
}

/** The claimed jobs of one collection that can be minted now, with their assets and mint calls. */
interface MintGroup {
  contract: string;
  jobs: Job<typeof MINT_JOB>[];
  items: MintItem[];
  calls: MintCall[];
  /** Assets created before their user had a wallet here: their `mint_for_address` is written when recorded. */
  addressless: Set<string>;
}

/**
 * The claimed jobs whose asset can be minted now, grouped by collection. The others are completed
 * (already in a transaction, minted or gone) or deferred (no wallet yet, collection not deployed): the
 * wallet's job and the collection's deployment wake them.
 */
async function readyByCollection(ctx: ChainCtx, jobs: Job<typeof MINT_JOB>[]): Promise<Map<string, MintGroup>> {
  // The recipient is the user's wallet on this chain (created by the wallet job at the first mint here).
  const assets = await ctx.db
    .selectFrom('assets')
    .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
    .leftJoin('wallets', (j) => j.onRef('wallets.user_uid', '=', 'assets.mint_for_user_uid').onRef('wallets.chain_id', '=', 'collections.chain_id'))
    .leftJoin('in_flight_mints', inFlightMintOf)
    .select([
      'assets.uid',
      'assets.token_id',
      'assets.mint_status',
      'in_flight_mints.tx_id as in_tx_id',
      'assets.collection_uid',
      'assets.pending_token_uri',
      'assets.mint_for_address',
      'wallets.address as wallet_address',
      'collections.status as collection_status',
      'collections.contract_address',
      'collections.chain_id',
    ])
    .where(
      'assets.uid',
      'in',
      jobs.map((j) => j.ref),
    )
    .execute();
  const byUid = new Map(assets.map((a) => [a.uid, a]));
  const done: number[] = [];
  const walletless: { job: Job<typeof MINT_JOB>; chainId: number }[] = [];
  const undeployed: { job: Job<typeof MINT_JOB>; uid: string }[] = []; // their collection's deployment is under way
  const ready = new Map<string, MintGroup>();
  for (const job of jobs) {
    const a = byUid.get(job.ref);
    if (a?.mint_status !== 'pending' || a.in_tx_id !== null) {
      done.push(job.id); // already in a transaction, minted or gone
    } else if (!a.wallet_address) {
      walletless.push({ job, chainId: a.chain_id });
    } else if (a.collection_status !== 'deployed' || !a.contract_address) {
      undeployed.push({ job, uid: a.collection_uid });
    } else {
      const group = ready.get(a.collection_uid) ?? { contract: a.contract_address, jobs: [], items: [], calls: [], addressless: new Set<string>() };
      group.jobs.push(job);
      if (a.mint_for_address === null) group.addressless.add(a.uid);
      group.items.push({ asset_uid: a.uid, token_id: a.token_id, to: a.wallet_address });
      group.calls.push({ to: a.wallet_address as Address, tokenId: a.token_id, tokenUri: onChainUri(a.pending_token_uri) });
      ready.set(a.collection_uid, group);
    }
  }
  if (done.length) await ctx.queue.completeMany(ctx.db, done);
  if (walletless.length) await waitForWallets(ctx, walletless);
  await deferUntilDeployed(ctx, { table: 'collections', jobKind: MINT_JOB, lock: 'collectionDeployed' }, undeployed);
  return ready;
}

/**
 * Mints that wait for their users' wallet jobs, which wake their groups once the wallets exist. In one
 * transaction: an airdrop's claim can hold hundreds of assets whose users have no wallet yet. A wallet
 * made since the mints' assets were read (its job finished meanwhile, and woke their groups while they
 * were claimed) has nothing to wait for: those mints are due again at once.
 */
async function waitForWallets(ctx: ChainCtx, walletless: { job: Job<typeof MINT_JOB>; chainId: number }[]): Promise<void> {
  const dueNow = await ctx.db.transaction().execute(async (tx) => {
    const { made } = await requestWallets(
      ctx,
      tx,
      walletless.map(({ job, chainId }) => ({ userUid: job.groupKey!, chainId })),
    );
    const madeFor = new Set(made.map((w) => `${w.userUid}@${w.chainId}`));
    const hasWalletNow = (w: { job: Job<typeof MINT_JOB>; chainId: number }) => madeFor.has(`${w.job.groupKey!}@${w.chainId}`);
    const now = walletless.filter(hasWalletNow);
    const later = walletless.filter((w) => !hasWalletNow(w));
    await ctx.queue.deferMany(
      tx,
      now.map((w) => w.job),
      0,
    );
    await ctx.queue.deferMany(
      tx,
      later.map((w) => w.job),
      WALLET_WAIT_MS,
    );
    return now.length;
  });
  ctx.queue.notify(WALLET_JOB);
  if (dueNow) ctx.queue.notify(MINT_JOB);
}

/** One claim's mint transactions: recorded, then broadcast, as the chain's room allows. */
class MintRun {
  /** Recorded and not yet handed to the sender. */
  private recorded: ChainTxRow[] = [];
  /** Broadcasts under way. */
  readonly sends: Promise<unknown>[] = [];
  /** Jobs the chain had no room for in time. */
  readonly waiting: ClaimedJob[] = [];
  // Each transaction is recorded by a commit of its own (short holds of SQLite's lock) that does not
  // wait for the disk: the sender flushes them all at once before it broadcasts any.
  private readonly commit: GroupCommit;

  constructor(
    private readonly ctx: ChainCtx,
    private readonly sizing: MintSizing,
    private readonly perTx: number,
  ) {
    this.commit = commitOf(ctx);
  }

  /**
   * Not awaited: while the node mines these, the next batch is claimed and signed. The rows are
   * committed, so a broadcast that fails or never happens is retried by the tracker.
   */
  sendRecorded(): void {
    if (this.recorded.length)
      this.sends.push(
        this.ctx.sender
          .broadcast(this.recorded)
          .catch((err) => this.ctx.log.warn({ err: (err as Error).message }, 'mint broadcast failed; the tracker retries')),
      );
    this.recorded = [];
  }

  /** Records a collection's ready jobs in transactions that fit the room; the rest wait (see `waiting`). */
  async recordGroup(collectionUid: string, g: MintGroup): Promise<void> {
    const sender = this.ctx.sender;
    let from = 0;
    while (from < g.calls.length) {
      if (this.waiting.length) {
        this.waiting.push(...g.jobs.slice(from));
        break;
      }
      // The room of the next block, as the transactions before this one left it.
      // At least a token, and not a sliver of a block: a transaction has its own overhead and slot.
      const first = BigInt(new MintGasMeter().total + new MintGasMeter().cost(g.calls[from]));
      const least = first > MIN_TX_GAS ? first : bigMin(MIN_TX_GAS, sender.shareGas());
      if (!sender.hasRoom(least)) {
        // What is recorded goes out now: the room it takes frees only once it is in a block.
        this.sendRecorded();
        if (!(await sender.waitForRoom(least, ROOM_WAIT_MS))) {
          this.waiting.push(...g.jobs.slice(from));
          break;
        }
      }
      // The room is in gas limits as signed; the range is chosen with the meter, whose limit is
      // `meterPerGas` times what a signed limit has been lately (see estimatedGas).
      const budget = BigInt(Math.min(MAX_TX_GAS, Math.floor(Number(sender.room().gas) * this.sizing.meterPerGas)));
      const to = nextRangeByGas(g.calls, from, this.perTx, budget);
      const batch = { items: g.items.slice(from, to), jobs: g.jobs.slice(from, to), calls: g.calls.slice(from, to), addressless: g.addressless };
      from = to;
      const row = await this.recordBatch(collectionUid, g.contract, batch);
      // Sent with the claim's others, one block for all: the tracker leaves it to this broadcast.
      sender.holdForBroadcast(row);
      this.recorded.push(row);
    }
  }

  /** Signs and records one mint transaction, with its assets marked and its jobs completed, in one commit. */
  private async recordBatch(collectionUid: string, contract: string, batch: Omit<MintGroup, 'contract'>): Promise<ChainTxRow> {
    const { ctx, sizing } = this;
    const sender = ctx.sender;
    const { items, jobs, calls, addressless } = batch;
    const rounds = Object.fromEntries(jobs.map((j) => [j.ref, j.payload.round ?? 1]));
    const payload: OutcomePayloads[typeof MINT_TX] = { collection_uid: collectionUid, contract, items, rounds };
    // Encoded before the transaction: on SQLite the API's next group of creates waits for its lock.
    const data = mintBatchCalldata(calls);
    const metered = mintGasFor(calls);
    const gas = sender.paced ? await estimatedGas(sender, contract as Address, data, metered) : metered;
    sizing.meterPerGas = Number(metered) / Number(gas);
    sizing.gasPerToken = Math.max(1, Math.ceil(Number(gas) / calls.length));
    const committed = await this.commit(async (tx) => {
      const r = await sender.record(tx, { kind: MINT_TX, ref: collectionUid, payload, to: contract as Address, data, gas });
      // The assets' link to the transaction is a row each of their own, not a change of the asset (see
      // migration 030): the asset itself stays as it was until the outcome.
      await insertRows(
        tx,
        'in_flight_mints',
        items.map((i) => ({ collection_uid: collectionUid, token_id: i.token_id, asset_uid: i.asset_uid, tx_id: r.id })),
        { held: true }, // PostgreSQL: sent with the next statement, the jobs' completion and the COMMIT
      );
      // The recipient, for an asset created before its user's wallet: the wallet on this chain, as read
      // above (a wallet never changes once created). Most assets have it from their creation.
      const unaddressed = items.filter((i) => addressless.has(i.asset_uid)).map((i) => i.asset_uid);
      if (unaddressed.length)
        await tx
          .updateTable('assets')
          .set((eb) => ({
            mint_for_address: eb
              .selectFrom('wallets')
              .select('wallets.address')
              .whereRef('wallets.user_uid', '=', 'assets.mint_for_user_uid')
              .where('wallets.chain_id', '=', sender.chainId),
            updated_at: nowIso(),
          }))
          .where('uid', 'in', unaddressed)
          .where('mint_for_address', 'is', null)
          .execute();
      await ctx.queue.completeMany(
        tx,
        jobs.map((j) => j.id),
      );
      return r;
    });
    return committed.result;
  }
}

/**
 * The gas limit of a mint on a chain with a block time. A node fills a block by the gas limits of what
 * it includes, and the meter's limit (every holder fresh, with a margin) can be twice what a batch
 * uses: blocks would stay half empty. The node's estimate on the last mined block is an upper bound of
 * what the batch uses in whatever order it runs with the other mints in flight (another relayer's
 * mint to the same holder only makes the balance slot it writes non-zero, which costs less); with a
 * margin, and never more than the meter's. Never on the pending state, some nodes' default (Hardhat's):
 * it counts the mints in the mempool as done, and a batch that a block then orders before them runs
 * out of gas writing a balance that is still zero (as after a rewind, when the same bytes are mined again).
 */
async function estimatedGas(sender: ChainCtx['sender'], contract: Address, data: Hex, metered: bigint): Promise<bigint> {
  const estimate = await sender.client.estimateGas({ account: sender.relayers[0].address, to: contract, data, blockTag: 'latest' }).catch(() => null);
  if (estimate === null) return metered;
  const withMargin = (estimate * ESTIMATE_MARGIN_PER_MILLE) / 1000n;
  return withMargin < metered ? withMargin : metered;
}
/** 20 % over the node's estimate. */
const ESTIMATE_MARGIN_PER_MILLE = 1200n;

/**
 * What the contract stores for a token: the CID of a production App's IPFS document; anything else
 * (rows prepared before development documents moved to the metadata route) mints as base URI + id.
 */
function onChainUri(pendingTokenUri: string | null): string | null {
  return pendingTokenUri?.startsWith('ipfs://') ? pendingTokenUri : null;
}

/** [from, to) ranges of at most `maxCount` items whose mintBatch gas limit stays within `budget` (at least one each). */
export function splitByGas(items: readonly MintCall[], maxCount: number, budget: bigint): [number, number][] {
  const ranges: [number, number][] = [];
  for (let from = 0; from < items.length; ) {
    const to = nextRangeByGas(items, from, maxCount, budget);
    ranges.push([from, to]);
    from = to;
  }
  return ranges;
}

/** The end of the next range from `from`: at most `maxCount` items within `budget` (at least one). */
export function nextRangeByGas(items: readonly MintCall[], from: number, maxCount: number, budget: bigint): number {
  const meter = new MintGasMeter();
  meter.add(items[from]);
  let to = from + 1;
  for (; to < items.length && to - from < maxCount && meter.total + meter.cost(items[to]) <= budget; to++) meter.add(items[to]);
  return to;
}
