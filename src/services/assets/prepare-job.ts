// The prepare job (`asset.prepare`): an accepted asset's image and metadata document are stored
// (metadata/prepare.ts) before the mint job takes it; when that cannot work, the asset fails visibly.
import type { Ctx } from '../context.js';
import type { Job } from '../../jobs/queue.js';
import type { JobHandler } from '../../jobs/worker.js';
import { MINT_JOB, PREPARE_JOB } from '../../jobs/kinds.js';
import { queueOn } from '../../jobs/queue.js';
import { nowIso } from '../../util/time.js';
import { MetadataError } from '../../metadata/fetch-image.js';
import { assetDataFromDocument, prepareAssetMetadata } from '../../metadata/prepare.js';
import { emitEvent } from '../events.js';
import { getAsset } from './reads.js';
import { inFlightMintOf } from './in-flight-mints.js';

/** The prepare job: store image and document, record the token URI, then hand the asset to the mint job. */
export function prepareJobHandler(ctx: Ctx): JobHandler<typeof PREPARE_JOB> {
  return {
    kind: PREPARE_JOB,
    batchSize: 8,
    leaseMs: 120_000, // > the 15 s fetch timeout plus storing, with room: a lease must outlive the work
    pollMs: 1000,
    async handle(jobs) {
      // Fetches run side by side; each job settles on its own (one bad image fails only its asset).
      await Promise.all(jobs.map((job) => prepareOne(ctx, job)));
    },
  };
}

async function prepareOne(ctx: Ctx, job: Job<typeof PREPARE_JOB>): Promise<void> {
  try {
    const a = await ctx.db
      .selectFrom('assets')
      .innerJoin('apps', 'apps.uid', 'assets.app_uid')
      .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
      .leftJoin('in_flight_mints', inFlightMintOf)
      .select([
        'assets.uid',
        'assets.name',
        'assets.metadata',
        'assets.mint_status',
        'in_flight_mints.tx_id as in_tx_id',
        'assets.mint_for_user_uid',
        'assets.store_image',
        'apps.environment',
        'collections.chain_id',
      ])
      .where('assets.uid', '=', job.ref)
      .executeTakeFirst();
    if (a?.mint_status !== 'pending' || a.in_tx_id !== null) {
      await ctx.queue.complete(ctx.db, job.id); // gone, failed or already minting
      return;
    }
    const prepared = await prepareAssetMetadata(ctx, {
      appEnvironment: a.environment,
      assetUid: a.uid,
      name: a.name,
      data: assetDataFromDocument(JSON.parse(a.metadata) as Record<string, unknown>),
      storeImage: a.store_image === 1,
    });
    await ctx.db.transaction().execute(async (tx) => {
      await tx
        .updateTable('assets')
        .set({ metadata: JSON.stringify(prepared.metadata), pending_token_uri: prepared.tokenUri, updated_at: nowIso() })
        .where('uid', '=', a.uid)
        .execute();
      await queueOn(ctx, a.chain_id).enqueue(tx, { kind: MINT_JOB, ref: a.uid, groupKey: a.mint_for_user_uid, payload: { round: 1 } });
      await ctx.queue.complete(tx, job.id);
    });
    queueOn(ctx, a.chain_id).notify(MINT_JOB);
  } catch (err) {
    const e = err instanceof MetadataError ? err : new MetadataError(`metadata could not be stored: ${(err as Error).message}`, false);
    if (e.permanent) {
      await failAsset(ctx, job, e.message);
    } else if (await ctx.queue.fail(job, e.message)) {
      await failAsset(ctx, job, `${e.message} (gave up after ${job.attempts} attempts)`);
    } else {
      ctx.log.warn({ asset: job.ref, attempt: job.attempts, err: e.message }, 'asset metadata not prepared yet, will retry');
    }
  }
}

/** The asset fails visibly: mint_status failed, mint_error says why, and an asset.mint_failed event. */
async function failAsset(ctx: Ctx, job: Job<typeof PREPARE_JOB>, reason: string): Promise<void> {
  ctx.log.warn({ asset: job.ref, err: reason }, 'asset cannot be minted: metadata preparation failed');
  await ctx.db.transaction().execute(async (tx) => {
    const a = await tx.selectFrom('assets').select(['app_uid', 'mint_status']).where('uid', '=', job.ref).executeTakeFirst();
    if (a && a.mint_status === 'pending') {
      await tx
        .updateTable('assets')
        .set({ mint_status: 'failed', mint_error: reason.slice(0, 1000), updated_at: nowIso() })
        .where('uid', '=', job.ref)
        .execute();
      await emitEvent(tx, a.app_uid, 'asset.mint_failed', { asset: await getAsset(ctx, a.app_uid, job.ref, tx) });
    }
    // The job ends failed with the reason, as a final transient failure already has (visible in /health counts).
    await ctx.queue.failNow(tx, job.id, reason);
  });
}
