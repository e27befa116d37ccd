// The work of one chain: its context (sender, forwarder, settings), the outcome effects of its
// transactions, its job handlers (deploys, mints, transfers and burns, edits, rewards) in a worker pool
// of their own, and its indexer. Started when the chain is first ready; while it is not ready (down,
// or out of funds) its jobs are put back without spending attempts, and the other chains go on.
import os from 'node:os';
import type { ChainCtx, Ctx } from '../context.js';
import type { ChainRuntime } from '../../chain/runtime.js';
import type { ChainJobHandlers, JobHandler } from '../../jobs/worker.js';
import { WorkerPool } from '../../jobs/worker.js';
import { isChainUnreachable } from '../../chain/unreachable.js';
import { RelayerNotActiveError } from '../../chain/nonces.js';
import { CHAIN_JOB_KINDS, kindOn, ROTATE_JOB } from '../../jobs/kinds.js';
import { queueOn } from '../../jobs/queue.js';
import { mintJobHandler } from '../assets/mint-job.js';
import { deployJobHandler } from '../collections/collections.js';
import { rewardJobHandlers } from '../rewards/index.js';
import { forwardJobHandler } from '../assets/lifecycle/relay.js';
import { editJobHandler } from '../assets/lifecycle/edit.js';
import { baseUriJobHandler } from '../collections/base-uri.js';
import { collectionInfoJobHandler } from '../collections/info.js';
import { outcomeHandlers } from './outcome-handlers.js';
import { ChainIndexer } from './indexer.js';
import { AppliedMints } from '../../chain/applied-mints.js';
import { relayerRotationJobHandler } from './relayer-rotation-job.js';
import { itemMintJobHandler } from '../items/mint-job.js';
import { itemForwardJobHandler } from '../items/relay.js';
import { itemUriJobHandler } from '../items/uri-job.js';

/** How long the jobs of a chain that is not ready wait before they are looked at again. */
const NOT_READY_DELAY_MS = 2000;
/** A chain's readiness is read again before work is sent when the last reading is older than this. */
const READY_MAX_AGE_MS = 1000;
/**
 * How long jobs wait when nothing may be sent (base fee over the ceiling, every relayer full): short
 * against a block time, so sending resumes within a block or two of the reason going away.
 */
const SEND_WAIT_MS = 1000;

/**
 * The handler of every kind of chain work, one table: the type requires an entry for each kind that
 * runs on a chain (jobs/kinds.ts), so a kind added without a handler does not compile.
 */
function chainJobHandlers(ctx: ChainCtx, rt: ChainRuntime): ChainJobHandlers {
  const rewards = rewardJobHandlers(ctx);
  return {
    'collection.deploy': deployJobHandler(ctx),
    'asset.mint': mintJobHandler(ctx),
    'asset.forward': forwardJobHandler(ctx),
    'asset.edit': editJobHandler(ctx),
    'reward.deploy': rewards.deploy,
    'reward.allocate': rewards.allocate,
    'reward.claim': rewards.claim,
    'reward.withdraw': rewards.withdraw,
    'collection.base_uri': baseUriJobHandler(ctx),
    'collection.info': collectionInfoJobHandler(ctx),
    'relayers.rotate': relayerRotationJobHandler(ctx, rt),
    'item.mint': itemMintJobHandler(ctx),
    'item.forward': itemForwardJobHandler(ctx),
    'item.uri': itemUriJobHandler(ctx),
  };
}

/** A context whose chain (`ctx.chain`: id, name, explorer, confirmations), sender and forwarder are those of `rt`, and whose queue maps job kinds to it. */
export function chainContext(shared: Ctx, rt: ChainRuntime): ChainCtx {
  const spec = rt.spec;
  return {
    ...shared,
    queue: queueOn(shared, spec.id),
    chain: spec,
    sender: rt.sender,
    // Read from the runtime, which learns it once (deployed or found): the context is never mutated.
    get forwarder() {
      if (!rt.forwarder) throw new Error(`the forwarder of chain ${spec.id} is not known yet`);
      return rt.forwarder;
    },
  };
}

/**
 * A handler that runs only while its chain is ready and may send (fees under the ceiling, a relayer
 * with room): otherwise its jobs wait, attempts not spent.
 */
function gated(ctx: Ctx, rt: ChainRuntime, h: JobHandler): JobHandler {
  return {
    ...h,
    // Waiting before the claim, not after: a backlog is not claimed and put back over and over while
    // the base fee stays above the ceiling.
    async beforeClaim() {
      if (rt.sender.sendingBlockedBy()) await rt.sender.waitForRoom(0n, SEND_WAIT_MS * 2);
      return h.beforeClaim?.();
    },
    async handle(jobs) {
      if (!(await rt.readyNow(READY_MAX_AGE_MS))) {
        await ctx.queue.deferMany(ctx.db, jobs, NOT_READY_DELAY_MS);
        return;
      }
      if (await rt.sender.blockedNow()) {
        await ctx.queue.deferMany(ctx.db, jobs, SEND_WAIT_MS);
        return;
      }
      await h.handle(jobs);
    },
  };
}

export interface ChainWork {
  /** The chain's own context. */
  ctx: ChainCtx;
  indexer: ChainIndexer | null;
  stop(): Promise<void>;
}

/**
 * Wires a chain: outcome effects once its forwarder is known (every effect may rely on it), and with
 * `runWorkers` its job handlers and indexer once it is first ready.
 */
export function startChainWork(shared: Ctx, rt: ChainRuntime, runWorkers: boolean): ChainWork {
  const ctx = chainContext(shared, rt);
  let pool: WorkerPool | null = null;
  const work: ChainWork = {
    ctx,
    indexer: null,
    async stop() {
      await pool?.stop();
      await work.indexer?.stop();
    },
  };
  // What this process's mint outcomes marked, for its indexer (which reads the same logs).
  const appliedMints = new AppliedMints();
  rt.onForwarder(() => rt.useOutcomes(outcomeHandlers(ctx, appliedMints)));
  if (!runWorkers) return work;
  let stopped = false;
  const stop = work.stop;
  work.stop = async () => {
    stopped = true;
    await stop();
  };
  rt.onFirstReady(() => {
    if (stopped) return;
    const table = chainJobHandlers(ctx, rt);
    // Every chain kind but the rotation waits for its chain's readiness and room; the rotation's
    // transactions are the deployer's, and it waits for readiness itself.
    const handlers = CHAIN_JOB_KINDS.map((kind) => (kind === ROTATE_JOB ? table[kind] : gated(shared, rt, table[kind] as JobHandler)));
    // A relayer a rotation retired after this process last read the set is a wait, like an outage: the
    // job runs again with the set read again, its attempt not spent.
    const waits = (err: unknown) => isChainUnreachable(err) || err instanceof RelayerNotActiveError;
    pool = new WorkerPool(shared.queue, shared.log.child({ component: 'worker', chain: rt.spec.id }), `${os.hostname()}:${process.pid}`, waits);
    pool.start(handlers, (kind) => kindOn(shared, kind, rt.spec.id)); // this chain's own kinds
    work.indexer = new ChainIndexer(ctx, appliedMints);
    work.indexer.start();
  });
  return work;
}
