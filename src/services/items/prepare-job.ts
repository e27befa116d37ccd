// The item prepare job (`item.prepare`): an item's image and metadata document are stored as an asset's
// are (metadata/prepare.ts): with store_image_on_ipfs the image is fetched and kept, and a production
// App's document becomes an IPFS file whose `ipfs://<cid>` is the item's token URI. The item.uri job then
// sets that CID on the contract (setTokenCID), so that its `uri(id)` answers it. Mints never wait for
// this: until the CID is on chain, `uri(id)` is the metadata route, which serves the same document.
import type { Ctx } from '../context.js';
import type { Job } from '../../jobs/queue.js';
import type { JobHandler } from '../../jobs/worker.js';
import { ITEM_PREPARE_JOB, ITEM_URI_JOB } from '../../jobs/kinds.js';
import { queueOn } from '../../jobs/queue.js';
import { nowIso } from '../../util/time.js';
import { MetadataError } from '../../metadata/fetch-image.js';
import { assetDataFromDocument, prepareAssetMetadata } from '../../metadata/prepare.js';

export function itemPrepareJobHandler(ctx: Ctx): JobHandler<typeof ITEM_PREPARE_JOB> {
  return {
    kind: ITEM_PREPARE_JOB,
    batchSize: 8,
    leaseMs: 120_000, // > the 15 s fetch timeout plus storing, with room, as the asset prepare job's
    pollMs: 1000,
    async handle(jobs) {
      // Fetches run side by side; each job settles on its own.
      await Promise.all(jobs.map((job) => prepareOne(ctx, job)));
    },
  };
}

async function prepareOne(ctx: Ctx, job: Job<typeof ITEM_PREPARE_JOB>): Promise<void> {
  try {
    await prepareItem(ctx, job, true);
  } catch (err) {
    const e = err instanceof MetadataError ? err : new MetadataError(`metadata could not be stored: ${(err as Error).message}`, false);
    if (!e.permanent && !(await ctx.queue.fail(job, e.message))) {
      ctx.log.warn({ item: job.ref, attempt: job.attempts, err: e.message }, 'item metadata not prepared yet, will retry');
      return;
    }
    // An item cannot fail as an asset does (it may be minted already): its document is stored without
    // the image copy, pointing at image_url as given, and the reason is logged.
    ctx.log.warn({ item: job.ref, err: e.message }, 'item image not stored; its document keeps image_url');
    try {
      await prepareItem(ctx, job, false);
    } catch (again) {
      ctx.log.error({ item: job.ref, err: (again as Error).message }, 'item metadata could not be stored');
      await ctx.queue.failNow(ctx.db, job.id, (again as Error).message);
    }
  }
}

/** Stores the item's document (and image when `withImage` and asked for), records it, and queues its announcement on chain. */
async function prepareItem(ctx: Ctx, job: Job<typeof ITEM_PREPARE_JOB>, withImage: boolean): Promise<void> {
  const i = await ctx.db
    .selectFrom('items')
    .innerJoin('apps', 'apps.uid', 'items.app_uid')
    .innerJoin('collections', 'collections.uid', 'items.collection_uid')
    .select(['items.uid', 'items.name', 'items.metadata', 'items.store_image', 'items.token_uri', 'apps.environment', 'collections.chain_id'])
    .where('items.uid', '=', job.ref)
    .executeTakeFirst();
  if (!i) {
    await ctx.queue.complete(ctx.db, job.id);
    return;
  }
  const prepared = await prepareAssetMetadata(ctx, {
    appEnvironment: i.environment,
    assetUid: i.uid,
    name: i.name,
    data: assetDataFromDocument(JSON.parse(i.metadata) as Record<string, unknown>),
    storeImage: withImage && i.store_image === 1,
  });
  // A new CID is set on chain; an edit whose URI stays (development Apps) is announced by the URI event.
  const announce = prepared.tokenUri !== null ? prepared.tokenUri !== i.token_uri || job.payload.edit === true : job.payload.edit === true;
  const chainId = Number(i.chain_id);
  await ctx.db.transaction().execute(async (tx) => {
    // Only over the document that was read: an edit meanwhile has queued its own preparation. (Not by
    // updated_at: mints confirmed meanwhile change it.)
    const written = await tx
      .updateTable('items')
      .set({ metadata: JSON.stringify(prepared.metadata), token_uri: prepared.tokenUri, updated_at: nowIso() })
      .where('uid', '=', i.uid)
      .where('metadata', '=', i.metadata)
      .executeTakeFirst();
    if (Number(written.numUpdatedRows) === 1 && announce) await queueOn(ctx, chainId).enqueue(tx, { kind: ITEM_URI_JOB, ref: i.uid, payload: {} });
    await ctx.queue.complete(tx, job.id);
  });
  if (announce) queueOn(ctx, chainId).notify(ITEM_URI_JOB);
}
