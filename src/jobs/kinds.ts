// Job kinds that more than one module enqueues or handles, named once.
import { chainKind } from '../chain/chains.js';
import type { JobQueue } from './queue.js';

/** Mints an accepted asset (batched per collection into one chain transaction). */
export const MINT_JOB = 'asset.mint';

/**
 * The kinds of work done on a chain (deploys, mints, transfers and burns, edits, reward transactions):
 * each chain has its own kinds of these (chainKind), so its own worker loops. The others (wallets,
 * metadata) are the same on every chain.
 */
export const CHAIN_JOB_KINDS = ['collection.deploy', MINT_JOB, 'asset.forward', 'asset.edit', 'reward.deploy', 'reward.allocate', 'reward.claim', 'reward.withdraw'];
const CHAIN_JOBS = new Set(CHAIN_JOB_KINDS);

interface KindCtx { homeChainId?: number; config: { chainId: number }; queue: JobQueue }

/**
 * The kind of a job for a record on `chainId`. The database's home chain is the one every record was
 * on before there were several; without one recorded, the default chain.
 */
export function kindOn(ctx: Omit<KindCtx, 'queue'>, base: string, chainId: number): string {
  return CHAIN_JOBS.has(base) ? chainKind(base, chainId, ctx.homeChainId ?? ctx.config.chainId) : base;
}

/** The job queue for work on `chainId`: chain job kinds are mapped to that chain's. */
export function queueOn(ctx: KindCtx, chainId: number): JobQueue {
  return ctx.queue.mapped((k) => kindOn(ctx, k, chainId));
}
