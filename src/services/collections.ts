// Collections: an ERC-721 contract per collection, deployed as a job through the chain sender.
import { encodeDeployData, getAddress, type Address } from 'viem';
import type { Ctx } from './context.js';
import type { JobHandler } from '../jobs/worker.js';
import { artifact } from '../chain/artifacts.js';
import { claimOutcome, type ChainTxRow, type TxOutcome } from '../chain/sender.js';
import { ApiError } from '../util/errors.js';
import { newUid } from '../util/ids.js';
import { nowIso } from '../util/time.js';
import { collectionView } from './views.js';

export const DEPLOY_JOB = 'collection.deploy';
const DEPLOY_TX = 'collection.deploy';

export interface NewCollection {
  name: string;
  symbol: string;
  editable: boolean;
  description?: string | null;
  external_url?: string | null;
}

export async function createCollection(ctx: Ctx, appUid: string, input: NewCollection): Promise<{ uid: string }> {
  if (!input.name.trim()) throw ApiError.validation([{ field: 'name', code: 'required', message: 'Name must not be empty.' }]);
  if (!/^[A-Za-z0-9]{1,16}$/.test(input.symbol)) throw ApiError.validation([{ field: 'symbol', code: 'invalid', message: 'Symbol must be 1-16 letters or digits.' }]);
  const app = await ctx.db.selectFrom('apps').select('uid').where('uid', '=', appUid).executeTakeFirst();
  if (!app) throw ApiError.notFound('App');
  const uid = newUid();
  await ctx.db.transaction().execute(async (tx) => {
    await tx
      .insertInto('collections')
      .values({
        uid,
        app_uid: appUid,
        name: input.name,
        symbol: input.symbol,
        description: input.description ?? null,
        external_url: input.external_url ?? null,
        editable: input.editable ? 1 : 0,
        status: 'deploying',
        contract_address: null,
        next_token_id: 1,
        created_at: nowIso(),
      })
      .execute();
    await ctx.queue.enqueue(tx, { kind: DEPLOY_JOB, ref: uid });
  });
  ctx.queue.notify(DEPLOY_JOB);
  return { uid };
}

export async function getCollection(ctx: Ctx, appUid: string, uid: string) {
  const c = await ctx.db.selectFrom('collections').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!c) throw ApiError.notFound('Collection');
  return collectionView(c, ctx.config);
}

export function metadataBaseUri(ctx: Ctx, collectionUid: string): string {
  return `${ctx.config.publicUrl}/metadata/${collectionUid}/`;
}

export function deployJobHandler(ctx: Ctx): JobHandler {
  const sender = ctx.sender!;
  const { abi, bytecode } = artifact('MintworksCollection');
  return {
    kind: DEPLOY_JOB,
    batchSize: 10,
    leaseMs: 60_000,
    pollMs: 1000,
    async handle(jobs) {
      for (const job of jobs) {
        const c = await ctx.db.selectFrom('collections').selectAll().where('uid', '=', job.ref).executeTakeFirst();
        const pendingTx = await ctx.db.selectFrom('chain_txs').select('id').where('kind', '=', DEPLOY_TX).where('ref', '=', job.ref).where('handled', '=', 0).executeTakeFirst();
        if (!c || c.status === 'deployed' || pendingTx) {
          await ctx.queue.complete(ctx.db, job.id);
          continue;
        }
        const data = encodeDeployData({
          abi,
          bytecode,
          args: [c.name, c.symbol ?? '', metadataBaseUri(ctx, c.uid), c.editable === 1, ctx.forwarder!, sender.relayers.map((r) => r.address)],
        });
        const gas = await sender.client.estimateGas({ account: sender.relayers[0].address, data });
        const row = await ctx.db.transaction().execute(async (tx) => {
          const r = await sender.record(tx, { kind: DEPLOY_TX, ref: c.uid, payload: { collection_uid: c.uid }, to: null, data, gas: (gas * 12n) / 10n });
          await ctx.queue.complete(tx, job.id);
          return r;
        });
        await sender.broadcast([row]);
      }
    },
  };
}

/** Outcome of a deployment: the collection is deployed, or the deployment is tried again. */
export function deployOutcome(ctx: Ctx) {
  return async (row: ChainTxRow, outcome: TxOutcome): Promise<void> => {
    await ctx.db.transaction().execute(async (tx) => {
      if (!(await claimOutcome(tx, row.id))) return;
      if (outcome.ok && row.contract_address) {
        await tx.updateTable('collections').set({ status: 'deployed', contract_address: row.contract_address }).where('uid', '=', row.ref).execute();
        ctx.log.info({ collection: row.ref, address: getAddress(row.contract_address as Address) }, 'collection deployed');
      } else {
        ctx.log.error({ collection: row.ref, reason: outcome.reason }, 'collection deployment failed, trying again');
        await ctx.queue.enqueue(tx, { kind: DEPLOY_JOB, ref: row.ref, runAt: Date.now() + 5000 });
      }
    });
  };
}
