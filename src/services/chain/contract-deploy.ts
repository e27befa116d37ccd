// Deploying a contract for a record (a collection, a reward) as a job: the deploy transaction is signed
// and recorded with the job's completion, broadcast after the commit; its outcome marks the record
// deployed (with the address from the receipt) or queues the deployment again.
import { getAddress, type Address, type Hex } from 'viem';
import type { ChainCtx } from '../context.js';
import type { Tx } from '../../store/db.js';
import type { JobHandler } from '../../jobs/worker.js';
import type { COLLECTION_DEPLOY_JOB, REWARD_DEPLOY_JOB } from '../../jobs/kinds.js';
import type { COLLECTION_DEPLOY_TX, OutcomeEffect, OutcomeHandler, OutcomePayloads, REWARD_DEPLOY_TX } from '../../chain/outcomes.js';

type DeployJobKind = typeof COLLECTION_DEPLOY_JOB | typeof REWARD_DEPLOY_JOB;
type DeployTxKind = typeof COLLECTION_DEPLOY_TX | typeof REWARD_DEPLOY_TX;

export interface DeploySpec<R extends { uid: string; status: string }, J extends DeployJobKind, T extends DeployTxKind> {
  jobKind: J;
  txKind: T;
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

/** The record is deployed (with the address from the receipt), or its deployment is queued again. */
export function contractDeployOutcome<T extends DeployTxKind>(ctx: ChainCtx, spec: DeployOutcomeSpec): OutcomeHandler<T> {
  return async ({ row, ok, reason }) =>
    async (tx) => {
      if (ok && row.contract_address) {
        await tx.updateTable(spec.table).set({ status: 'deployed', contract_address: row.contract_address }).where('uid', '=', row.ref).execute();
        ctx.log.info({ [spec.table]: row.ref, address: getAddress(row.contract_address as Address) }, 'contract deployed');
        return spec.onDeployed?.(tx, row.ref);
      }
      ctx.log.error({ [spec.table]: row.ref, reason }, 'contract deployment failed, trying again');
      await ctx.queue.enqueue(tx, { kind: spec.jobKind, ref: row.ref, runAt: Date.now() + 5000 });
    };
}
