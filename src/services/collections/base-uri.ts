// Re-pointing deployed collections at a new public URL (`mintworks config set public-url`): each
// collection's contract keeps the base token URI it was deployed with, and a development App's token
// resolves to baseURI + id, so a new URL is sent to the contract with setBaseURI (every relayer is an
// operator of the collection). Setting the same URI again is harmless, so a transaction sent twice (a
// retry after a failure) changes nothing more. A development App's contract document (a file of this
// service) is re-pointed likewise, through setCollectionInfo (info.ts).
import { encodeFunctionData, type Address } from 'viem';
import type { ChainCtx, Ctx } from '../context.js';
import type { JobHandler } from '../../jobs/worker.js';
import { BASE_URI_JOB, COLLECTION_INFO_JOB } from '../../jobs/kinds.js';
import { queueOn } from '../../jobs/queue.js';
import { artifact } from '../../chain/artifacts.js';
import { BASE_URI_TX, type OutcomeHandler } from '../../chain/outcomes.js';

/** A collection's base token URI under a public URL (what its deployment used, see collections.ts). */
export const baseUriUnder = (publicUrl: string, collectionUid: string) => `${publicUrl}/metadata/${collectionUid}/`;

/**
 * Queues setBaseURI for every deployed collection (each on its own chain); those still deploying get the
 * URL of the worker that deploys them. Returns the collections queued.
 */
export async function repointCollections(ctx: Ctx, publicUrl: string, rows?: DeployedCollection[]): Promise<DeployedCollection[]> {
  const list = rows ?? (await deployedCollections(ctx));
  await ctx.db.transaction().execute(async (tx) => {
    for (const r of list) {
      await queueOn(ctx, r.chain_id).enqueue(tx, { kind: BASE_URI_JOB, ref: r.uid, payload: { base_uri: baseUriUnder(publicUrl, r.uid) } });
      // A development App's contract document is a file of this service: its URI follows the new URL too.
      const c = await tx.selectFrom('collections').select('contract_uri').where('uid', '=', r.uid).executeTakeFirst();
      const sha = /^https?:\/\/.+\/files\/([0-9a-f]{64})$/.exec(c?.contract_uri ?? '')?.[1];
      const moved = sha ? `${publicUrl}/files/${sha}` : null;
      if (!moved || moved === c?.contract_uri) continue;
      await tx.updateTable('collections').set({ contract_uri: moved }).where('uid', '=', r.uid).execute();
      await queueOn(ctx, r.chain_id).enqueue(tx, { kind: COLLECTION_INFO_JOB, ref: r.uid });
    }
  });
  return list;
}

export interface DeployedCollection {
  uid: string;
  chain_id: number;
  contract_address: string;
}

/** The collections a new public URL would be sent to (what `config set public-url` shows before it asks). */
export async function deployedCollections(ctx: Pick<Ctx, 'db'>): Promise<DeployedCollection[]> {
  const rows = await ctx.db
    .selectFrom('collections')
    .select(['uid', 'chain_id', 'contract_address'])
    .where('status', '=', 'deployed')
    .where('contract_address', 'is not', null)
    .execute();
  return rows.map((r) => ({ uid: r.uid, chain_id: Number(r.chain_id), contract_address: r.contract_address! }));
}

export function baseUriJobHandler(ctx: ChainCtx): JobHandler<typeof BASE_URI_JOB> {
  const { abi } = artifact('MintworksCollection');
  return {
    kind: BASE_URI_JOB,
    batchSize: 20,
    leaseMs: 30_000,
    pollMs: 1000,
    async handle(jobs) {
      for (const job of jobs) {
        const c = await ctx.db.selectFrom('collections').select(['uid', 'contract_address', 'status']).where('uid', '=', job.ref).executeTakeFirst();
        if (!c?.contract_address || c.status !== 'deployed') {
          await ctx.queue.complete(ctx.db, job.id);
          continue;
        }
        const contract = c.contract_address;
        const data = encodeFunctionData({ abi, functionName: 'setBaseURI', args: [job.payload.base_uri] });
        const row = await ctx.db.transaction().execute(async (tx) => {
          const rec = await ctx.sender.record(tx, {
            kind: BASE_URI_TX,
            ref: c.uid,
            payload: { collection_uid: c.uid, contract, base_uri: job.payload.base_uri },
            to: contract as Address,
            data,
            gas: 200_000n,
          });
          await ctx.queue.complete(tx, job.id);
          return rec;
        });
        await ctx.sender.broadcast([row]);
      }
    },
  };
}

export function baseUriOutcome(ctx: ChainCtx): OutcomeHandler<typeof BASE_URI_TX> {
  return async ({ payload: p, receipt, reason }) =>
    async (tx) => {
      if (receipt?.status === 'success')
        return () => ctx.log.info({ collection: p.collection_uid, base_uri: p.base_uri }, 'collection base token URI re-pointed');
      await ctx.queue.enqueue(tx, { kind: BASE_URI_JOB, ref: p.collection_uid, payload: { base_uri: p.base_uri }, runAt: Date.now() + 5000 });
      return () => ctx.log.error({ collection: p.collection_uid, reason }, 'setting the base token URI did not succeed; trying again');
    };
}
