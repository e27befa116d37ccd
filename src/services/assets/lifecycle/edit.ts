// Edits (docs/api.md, Collections and assets): PUT /asset/{uid} replaces all metadata of an asset of an editable collection.
// The edit waits on the asset row (`pending_edit`) while an operator call emits ERC-4906 MetadataUpdate
// (and sets the new CID of a production App's document); it applies once that is mined.
import { encodeFunctionData, type Address } from 'viem';
import type { ChainCtx, Ctx } from '../../context.js';
import type { DbOrTx } from '../../../store/db.js';
import { isUniqueViolation } from '../../../store/db.js';
import type { JobHandler } from '../../../jobs/worker.js';
import { queueOn } from '../../../jobs/queue.js';
import { EDIT_JOB } from '../../../jobs/kinds.js';
import { artifact } from '../../../chain/artifacts.js';
import { EDIT_TX, type OutcomeHandler } from '../../../chain/outcomes.js';
import { setTokenCidCalldata } from '../../../chain/token-uri.js';
import { ApiError } from '../../../util/errors.js';
import { nowIso } from '../../../util/time.js';
import { buildMetadata, displayName, type AssetData } from '../../../domain/assets.js';
import { emitEvent } from '../../events.js';
import { getAsset } from '../reads.js';
import { assertImageUrlFetchable, needsPreparation, prepareAssetMetadata } from '../../../metadata/prepare.js';
import { MetadataError } from '../../../metadata/fetch-image.js';
import { saveAnswer, type IdempotentWrite } from '../../requests/idempotency.js';
import { chainOfAsset, MAX_ROUNDS } from './shared.js';
import { nameKey, nameSpellings } from '../../../domain/text.js';

interface PendingEdit {
  name: string;
  unique_name_key: string | null;
  previous_key: string | null;
  data: AssetData;
  metadata: Record<string, unknown>;
  token_uri: string | null;
  /** Production Apps and stored images: the new documents are stored (image fetched) by the job first. */
  needs_prepare: boolean;
  round: number;
}

// Long: one transaction: the checks and the writes hold the asset's row between them.
export async function editAsset(ctx: Ctx, appUid: string, uid: string, data: AssetData, idem?: IdempotentWrite): Promise<null> {
  const info = await ctx.db
    .selectFrom('assets')
    .innerJoin('apps', 'apps.uid', 'assets.app_uid')
    .select(['assets.store_image', 'apps.environment'])
    .where('assets.uid', '=', uid)
    .where('assets.app_uid', '=', appUid)
    .executeTakeFirst();
  if (!info) throw ApiError.notFound('Asset');
  // The image of an asset created with store_image_on_ipfs is stored again on edit: refuse early what cannot be fetched.
  if (info.store_image) await assertImageUrlFetchable(ctx, data.image_url);
  const chainId = await chainOfAsset(ctx.db, uid);
  try {
    await ctx.db.transaction().execute(async (tx) => {
      const a = await tx
        .selectFrom('assets')
        .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
        .selectAll('assets')
        .select('collections.editable')
        .where('assets.uid', '=', uid)
        .where('assets.app_uid', '=', appUid)
        .executeTakeFirst();
      if (!a) throw ApiError.notFound('Asset');
      if (a.editable !== 1) throw ApiError.of('not_editable');
      if (a.mint_status !== 'minted') throw ApiError.of('asset_not_minted');
      if (a.is_burned || a.is_burning) throw ApiError.of('asset_burned');
      if (a.is_editing) throw ApiError.of('asset_editing');
      const name = displayName(data.name, data.unique_name, a.token_id);
      if (data.unique_name) {
        const same = await tx
          .selectFrom('assets')
          .select('uid')
          .where('collection_uid', '=', a.collection_uid)
          .where('uid', '!=', uid)
          .where((eb) => eb.or([eb('name', 'in', nameSpellings(name)), eb('unique_name_key', 'in', nameSpellings(nameKey(name)))]))
          .executeTakeFirst();
        if (same) throw ApiError.of('asset_name_exists');
      }
      const edit: PendingEdit = {
        name,
        unique_name_key: data.unique_name ? nameKey(name) : null,
        previous_key: a.unique_name_key,
        data,
        metadata: buildMetadata(uid, name, data),
        token_uri: null,
        needs_prepare: needsPreparation(info.environment, info.store_image === 1),
        round: 1,
      };
      // The new unique name is reserved now (the unique index decides races); the rest applies when done.
      await tx
        .updateTable('assets')
        .set({ is_editing: 1, pending_edit: JSON.stringify(edit), unique_name_key: edit.unique_name_key, updated_at: nowIso() })
        .where('uid', '=', uid)
        .execute();
      await queueOn(ctx, chainId).enqueue(tx, { kind: EDIT_JOB, ref: uid });
      await saveAnswer(tx, idem, null);
    });
  } catch (err) {
    if (isUniqueViolation(err, 'unique_name_key')) throw ApiError.of('asset_name_exists');
    throw err;
  }
  queueOn(ctx, chainId).notify(EDIT_JOB);
  return null;
}

// Long: a batch's claim, signing and recording share the batch's state.
export function editJobHandler(ctx: ChainCtx): JobHandler<typeof EDIT_JOB> {
  const sender = ctx.sender;
  const abi = artifact('MintworksCollection').abi;
  return {
    kind: EDIT_JOB,
    batchSize: 20,
    leaseMs: 15_000,
    pollMs: 500,
    async handle(jobs) {
      for (const job of jobs) {
        const a = await ctx.db
          .selectFrom('assets')
          .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
          .innerJoin('apps', 'apps.uid', 'assets.app_uid')
          .select(['assets.token_id', 'assets.pending_edit', 'assets.store_image', 'apps.environment', 'collections.contract_address'])
          .where('assets.uid', '=', job.ref)
          .executeTakeFirst();
        if (!a?.pending_edit) {
          await ctx.queue.complete(ctx.db, job.id);
          continue;
        }
        let edit = JSON.parse(a.pending_edit) as PendingEdit;
        if (edit.needs_prepare) {
          try {
            const prepared = await prepareAssetMetadata(ctx, {
              appEnvironment: a.environment,
              assetUid: job.ref,
              name: edit.name,
              data: edit.data,
              storeImage: a.store_image === 1,
            });
            edit = { ...edit, metadata: prepared.metadata, token_uri: prepared.tokenUri, needs_prepare: false };
            await ctx.db
              .updateTable('assets')
              .set({ pending_edit: JSON.stringify(edit) })
              .where('uid', '=', job.ref)
              .execute();
          } catch (err) {
            if (!(err instanceof MetadataError) || !err.permanent) throw err; // transient: the job retries
            await abandonEdit(ctx, job.ref, edit, `the new image cannot be stored: ${err.message}`);
            await ctx.queue.complete(ctx.db, job.id);
            continue;
          }
        }
        // Development Apps serve the document from the service at the unchanged URI: MetadataUpdate tells
        // indexers to fetch it again. A new IPFS document gets its CID set on chain, which emits it too.
        // The contract stores only IPFS CIDs, so a development App's file-store URL is never set on chain:
        // its token resolves to baseURI + id, which serves the edited document as well.
        const setsCid = edit.token_uri?.startsWith('ipfs://') ?? false;
        const data = setsCid
          ? setTokenCidCalldata(a.token_id, edit.token_uri)
          : encodeFunctionData({ abi, functionName: 'refreshMetadata', args: [BigInt(a.token_id)] });
        const row = await ctx.db.transaction().execute(async (tx) => {
          // setTokenCID measured ~36k (a raw CID replaced) to ~58k (the first dag-pb bit of its bitmap word).
          const r = await sender.record(tx, {
            kind: EDIT_TX,
            ref: job.ref,
            payload: { asset_uid: job.ref },
            to: a.contract_address as Address,
            data,
            gas: setsCid ? 100_000n : 60_000n,
          });
          await ctx.queue.complete(tx, job.id);
          return r;
        });
        await sender.broadcast([row]);
      }
    },
  };
}

export function editOutcome(ctx: ChainCtx): OutcomeHandler<typeof EDIT_TX> {
  return async ({ row, ok, reason }) =>
    async (tx) => {
      const uid = row.ref;
      const a = await tx.selectFrom('assets').selectAll().where('uid', '=', uid).executeTakeFirst();
      if (!a?.pending_edit) return;
      const edit = JSON.parse(a.pending_edit) as PendingEdit;
      const t = nowIso();
      if (ok) {
        await tx
          .updateTable('assets')
          .set({
            name: edit.name,
            metadata: JSON.stringify(edit.metadata),
            token_uri: edit.token_uri ?? a.token_uri,
            is_editing: 0,
            pending_edit: null,
            updated_at: t,
          })
          .where('uid', '=', uid)
          .execute();
        await emitEvent(tx, a.app_uid, 'asset.edited', { asset: await getAsset(ctx, a.app_uid, uid, tx) });
      } else if (edit.round < MAX_ROUNDS) {
        await tx
          .updateTable('assets')
          .set({ pending_edit: JSON.stringify({ ...edit, round: edit.round + 1 }) })
          .where('uid', '=', uid)
          .execute();
        await ctx.queue.enqueue(tx, { kind: EDIT_JOB, ref: uid, runAt: Date.now() + 2000 });
      } else {
        await abandonEdit(ctx, uid, edit, `failed on chain: ${reason ?? 'reverted'}`, tx);
      }
    };
}

/** Gives an edit up: the asset keeps its previous metadata and name reservation. */
async function abandonEdit(ctx: Ctx, uid: string, edit: PendingEdit, reason: string, db: DbOrTx = ctx.db): Promise<void> {
  await db
    .updateTable('assets')
    .set({ is_editing: 0, pending_edit: null, unique_name_key: edit.previous_key, updated_at: nowIso() })
    .where('uid', '=', uid)
    .execute();
  ctx.log.error({ asset: uid, reason }, 'edit abandoned; the asset keeps its previous metadata');
}
