// Deploying a contract for a record (a collection, a reward) as a job: the deploy transaction is signed
// and recorded with the job's completion, broadcast after the commit; its outcome marks the record
// deployed (with the address from the receipt) or queues the deployment again. A record is deployed at
// most once: each deployment's address is known before it is sent (CREATE from its sender and nonce),
// and code at the address of any earlier deployment of the record ends it, whatever its receipt said.
import { getAddress, getContractAddress, type Address, type Hex } from 'viem';
import type { ChainCtx } from '../context.js';
import type { Tx } from '../../store/db.js';
import { lockForTransaction, type TransactionLock } from '../../store/locks.js';
import { leavingFor } from '../../domain/transitions.js';
import type { ClaimedJob } from '../../jobs/queue.js';
import type { JobHandler } from '../../jobs/worker.js';
import type { COLLECTION_DEPLOY_JOB, JobKind, REWARD_DEPLOY_JOB } from '../../jobs/kinds.js';
import type { COLLECTION_DEPLOY_TX, OutcomeEffect, OutcomeHandler, OutcomePayloads, REWARD_DEPLOY_TX } from '../../chain/outcomes.js';

type DeployJobKind = typeof COLLECTION_DEPLOY_JOB | typeof REWARD_DEPLOY_JOB;
type DeployTxKind = typeof COLLECTION_DEPLOY_TX | typeof REWARD_DEPLOY_TX;

export interface DeploySpec<R extends { uid: string; status: string }, J extends DeployJobKind, T extends DeployTxKind> {
  jobKind: J;
  txKind: T;
  table: 'collections' | 'rewards';
  onDeployed?(tx: Tx, uid: string): ReturnType<OutcomeEffect>;
  /** The record to deploy for, or undefined when it is gone. */
  load(uid: string): Promise<R | undefined>;
  /** Constructor call data (encodeDeployData). */
  deployData(record: R): Hex;
  payload(record: R): OutcomePayloads[T];
}

export function contractDeployJob<R extends { uid: string; status: string }, J extends DeployJobKind, T extends DeployTxKind>(
  ctx: ChainCtx,
  spec: DeploySpec<R, J, T>,
): JobHandler<J> {
  const sender = ctx.sender;
  return {
    kind: spec.jobKind,
    batchSize: 10,
    leaseMs: 60_000,
    pollMs: 1000,
    async handle(jobs) {
      for (const job of jobs) {
        const record = await spec.load(job.ref);
        const pendingTx = await ctx.db
          .selectFrom('chain_txs')
          .select('id')
          .where('kind', '=', spec.txKind)
          .where('ref', '=', job.ref)
          .where('handled', '=', 0)
          .executeTakeFirst();
        if (!record || record.status === 'deployed' || pendingTx) {
          await ctx.queue.complete(ctx.db, job.id);
          continue;
        }
        const found = await deployedEarlier(ctx, spec.txKind, record.uid);
        if (found) {
          const afterCommit = await ctx.db.transaction().execute(async (tx) => {
            await ctx.queue.complete(tx, job.id);
            return markDeployed(ctx, tx, spec.table, record.uid, found, spec.onDeployed);
          });
          afterCommit?.();
          continue;
        }
        const data = spec.deployData(record);
        const gas = await sender.client.estimateGas({ account: sender.relayers[0].address, data });
        const row = await ctx.db.transaction().execute(async (tx) => {
          const r = await sender.record(tx, { kind: spec.txKind, ref: record.uid, payload: spec.payload(record), to: null, data, gas: (gas * 12n) / 10n });
          await ctx.queue.complete(tx, job.id);
          return r;
        });
        await sender.broadcast([row]);
      }
    },
  };
}

export interface DeployOutcomeSpec {
  jobKind: DeployJobKind;
  table: 'collections' | 'rewards';
  /** Runs in the same transaction once the record is deployed (e.g. wake work that waited for it). */
  onDeployed?(tx: Tx, uid: string): ReturnType<OutcomeEffect>;
}

/** The record is deployed (with the address from the receipt, or the code found at its CREATE address), or its deployment is queued again. */
export function contractDeployOutcome<T extends DeployTxKind>(ctx: ChainCtx, spec: DeployOutcomeSpec): OutcomeHandler<T> {
  return async ({ row, ok, reason }) => {
    // A failure path asks the chain first: the deployment may have happened all the same.
    const address = ok && row.contract_address ? row.contract_address : await codeAt(ctx, createAddress(row));
    return async (tx) => {
      if (address) return markDeployed(ctx, tx, spec.table, row.ref, address, spec.onDeployed);
      ctx.log.error({ [spec.table]: row.ref, reason }, 'contract deployment failed, trying again');
      await ctx.queue.enqueue(tx, { kind: spec.jobKind, ref: row.ref, runAt: Date.now() + 5000 });
    };
  };
}

/** Where a deployment transaction puts its contract: fixed by its sender and nonce. */
function createAddress(row: { from_address: string; nonce: number }): Address {
  return getContractAddress({ from: row.from_address as Address, nonce: BigInt(row.nonce) });
}

/** The address, lower case, when the chain has code there; null when it has none. */
async function codeAt(ctx: ChainCtx, address: Address): Promise<string | null> {
  const code = await ctx.sender.client.getCode({ address });
  return code && code !== '0x' ? address.toLowerCase() : null;
}

/** The address of an earlier deployment of the record that the chain holds, if any. */
async function deployedEarlier(ctx: ChainCtx, txKind: DeployTxKind, uid: string): Promise<string | null> {
  const rows = await ctx.db.selectFrom('chain_txs').select(['from_address', 'nonce']).where('kind', '=', txKind).where('ref', '=', uid).execute();
  for (const r of rows) {
    const found = await codeAt(ctx, createAddress(r));
    if (found) return found;
  }
  return null;
}

async function markDeployed(
  ctx: ChainCtx,
  tx: Tx,
  table: 'collections' | 'rewards',
  uid: string,
  address: string,
  onDeployed?: (tx: Tx, uid: string) => ReturnType<OutcomeEffect>,
): ReturnType<OutcomeEffect> {
  const r = await tx
    .updateTable(table)
    .set({ status: 'deployed', contract_address: address })
    .where('uid', '=', uid)
    .where('status', 'in', table === 'collections' ? leavingFor('collection', 'deployed') : leavingFor('reward', 'deployed'))
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) return;
  ctx.log.info({ [table]: uid, address: getAddress(address as Address) }, 'contract deployed');
  return onDeployed?.(tx, uid);
}

/** How long work waits for its record's deployment at most: the deployment's outcome wakes it sooner. */
export const DEPLOYMENT_WAIT_MS = 5000;

/** What waits for which deployments: the records' table, the job kind, and the lock its wake-up takes shared. */
export interface DeploymentWait {
  table: 'collections' | 'rewards';
  jobKind: JobKind;
  lock: TransactionLock;
}

/**
 * Jobs whose record (`uid`: a collection, a reward) was read still deploying: deferred until the
 * deployment's outcome wakes them (its `onDeployed`), in one transaction. Never beside that outcome:
 * this takes `wait.lock` exclusively and the wake-up takes it shared. A deployment that committed since
 * the jobs were read woke them while they were claimed, which wakes nothing, so the records are read
 * again here, and the jobs of one deployed meanwhile are due at once instead of waiting out the delay.
 */
export async function deferUntilDeployed(ctx: ChainCtx, wait: DeploymentWait, waiting: { job: ClaimedJob; uid: string }[]): Promise<void> {
  if (waiting.length === 0) return;
  const dueNow = await ctx.db.transaction().execute(async (tx) => {
    await lockForTransaction(tx, wait.lock, 'exclusive');
    const deployed = new Set(
      (
        await tx
          .selectFrom(wait.table)
          .select('uid')
          .where('uid', 'in', [...new Set(waiting.map((w) => w.uid))])
          .where('status', '=', 'deployed')
          .where('contract_address', 'is not', null)
          .execute()
      ).map((r) => r.uid),
    );
    const now = waiting.filter((w) => deployed.has(w.uid)).map((w) => w.job);
    await ctx.queue.deferMany(tx, now, 0);
    await ctx.queue.deferMany(
      tx,
      waiting.filter((w) => !deployed.has(w.uid)).map((w) => w.job),
      DEPLOYMENT_WAIT_MS,
    );
    return now.length;
  });
  if (dueNow) ctx.queue.notify(wait.jobKind);
}
