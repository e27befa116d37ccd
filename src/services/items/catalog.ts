// Item types of ERC-1155 collections (docs/api.md, Items): create, read, list, edit. An item's token id
// is assigned at creation from its collection's counter; nothing happens on chain until its first mint.
// Its metadata document is served by the metadata route (the contract's `uri(id)` points there); an
// item with store_image_on_ipfs, and every item of a production App, is then prepared by a job as an
// asset is (prepare-job.ts): image kept, production documents on IPFS and their CID set on the contract.
import type { Ctx } from '../context.js';
import { isUniqueViolation, type DbOrTx } from '../../store/db.js';
import { ApiError } from '../../util/errors.js';
import { isUid } from '../../util/ids.js';
import { nowIso } from '../../util/time.js';
import { buildMetadata, type AssetData } from '../../domain/assets.js';
import { withNewUid } from '../uids.js';
import { saveAnswer, type IdempotentWrite } from '../requests/idempotency.js';
import { itemView, type ItemRow } from './views.js';
import { ITEM_PREPARE_JOB, ITEM_URI_JOB } from '../../jobs/kinds.js';
import { queueOn } from '../../jobs/queue.js';
import { assertImageUrlFetchable, needsPreparation, PREPARE_ATTEMPTS } from '../../metadata/prepare.js';

export interface NewItem {
  collection_uid: string;
  item_external_id: string;
  max_supply: bigint | null;
  /** store_image_on_ipfs: given at creation (edits store documents as the item was created). */
  data: Omit<AssetData, 'unique_name'> & { store_image_on_ipfs?: boolean };
}

export const itemNotFound = () => ApiError.notFound('Item');
const externalIdTaken = () => ApiError.of('item_external_id_exists');

/** The document of an item, as an asset's (its `original_id` is the item's uid). */
const itemMetadata = (uid: string, data: NewItem['data']) => buildMetadata(uid, data.name, { ...data, unique_name: false });

export async function createItem(ctx: Ctx, appUid: string, input: NewItem, idem?: IdempotentWrite): Promise<{ uid: string }> {
  const collection = isUid(input.collection_uid)
    ? await ctx.db
        .selectFrom('collections')
        .innerJoin('apps', 'apps.uid', 'collections.app_uid')
        .select(['collections.uid', 'collections.standard', 'apps.environment'])
        .where('collections.uid', '=', input.collection_uid)
        .where('collections.app_uid', '=', appUid)
        .executeTakeFirst()
    : undefined;
  if (!collection) throw ApiError.notFound('Collection');
  if (collection.standard !== 'ERC1155')
    throw ApiError.validation([
      { field: 'collection_uid', code: 'invalid', message: 'Items belong to ERC1155 collections; this collection is ERC721 (create assets in it).' },
    ]);
  const storeImage = input.data.store_image_on_ipfs === true;
  if (storeImage) await assertImageUrlFetchable(ctx, input.data.image_url);
  const prepare = needsPreparation(collection.environment, storeImage);
  try {
    const uid = await withNewUid('items', (uid) =>
      ctx.db.transaction().execute(async (tx) => {
        const next = await tx
          .updateTable('collections')
          .set((eb) => ({ next_token_id: eb('next_token_id', '+', 1) }))
          .where('uid', '=', collection.uid)
          .returning('next_token_id')
          .executeTakeFirstOrThrow();
        const t = nowIso();
        await tx
          .insertInto('items')
          .values({
            uid,
            app_uid: appUid,
            collection_uid: collection.uid,
            item_external_id: input.item_external_id,
            token_id: Number(next.next_token_id) - 1,
            name: input.data.name,
            metadata: JSON.stringify(itemMetadata(uid, input.data)),
            max_supply: input.max_supply === null ? null : input.max_supply.toString(),
            accepted_supply: '0',
            minted_supply: '0',
            created_at: t,
            updated_at: t,
            store_image: storeImage ? 1 : 0,
          })
          .execute();
        if (prepare) await ctx.queue.enqueue(tx, { kind: ITEM_PREPARE_JOB, ref: uid, payload: {}, maxAttempts: PREPARE_ATTEMPTS });
        await saveAnswer(tx, idem, { uid });
        return uid;
      }),
    );
    if (prepare) ctx.queue.notify(ITEM_PREPARE_JOB);
    return { uid };
  } catch (err) {
    if (isUniqueViolation(err, 'item_external_id')) throw externalIdTaken();
    throw err;
  }
}

/** The item row of an App, or a 404. */
export async function itemRow(db: DbOrTx, appUid: string, uid: string): Promise<ItemRow> {
  const i = isUid(uid) ? await db.selectFrom('items').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst() : undefined;
  if (!i) throw itemNotFound();
  return i;
}

export async function getItem(ctx: Ctx, appUid: string, uid: string) {
  return itemView(await itemRow(ctx.db, appUid, uid), ctx.installation);
}

/** The items of a collection, oldest first (an item list is a catalogue, in token id order). */
export async function listItems(ctx: Ctx, appUid: string, collectionUid: string) {
  const rows = isUid(collectionUid)
    ? await ctx.db
        .selectFrom('items')
        .selectAll()
        .where('collection_uid', '=', collectionUid)
        .where('app_uid', '=', appUid)
        .orderBy('token_id', 'asc')
        .limit(10_000)
        .execute()
    : [];
  return rows.map((i) => itemView(i, ctx.installation));
}

/**
 * PUT /item/{uid}: replaces the item's metadata (collections created with editable_assets). The
 * document is the metadata route's, so the change is served at once; holders' balances are untouched.
 * The ERC-1155 URI event that tells marketplaces is queued with the edit (uri-job.ts). An item stored as
 * an asset is (image kept, production App) is prepared again first, which then sets its new CID on chain
 * or announces the edit; until then its token URI is the previous document's.
 */
export async function editItem(ctx: Ctx, appUid: string, uid: string, data: NewItem['data'], idem?: IdempotentWrite): Promise<null> {
  const queued = await ctx.db.transaction().execute(async (tx) => {
    const i = await tx
      .selectFrom('items')
      .innerJoin('collections', 'collections.uid', 'items.collection_uid')
      .innerJoin('apps', 'apps.uid', 'items.app_uid')
      .select(['items.uid', 'items.store_image', 'collections.editable', 'collections.chain_id', 'apps.environment'])
      .where('items.uid', '=', uid)
      .where('items.app_uid', '=', appUid)
      .executeTakeFirst();
    if (!i) throw itemNotFound();
    if (i.editable !== 1) throw ApiError.of('not_editable', 'Items of this collection cannot be edited: it was created without editable assets.');
    if (i.store_image === 1) await assertImageUrlFetchable(ctx, data.image_url);
    await tx
      .updateTable('items')
      .set({ name: data.name, metadata: JSON.stringify(itemMetadata(uid, data)), updated_at: nowIso() })
      .where('uid', '=', uid)
      .execute();
    if (needsPreparation(i.environment, i.store_image === 1)) {
      await ctx.queue.enqueue(tx, { kind: ITEM_PREPARE_JOB, ref: uid, payload: { edit: true }, maxAttempts: PREPARE_ATTEMPTS });
      await saveAnswer(tx, idem, null);
      return () => ctx.queue.notify(ITEM_PREPARE_JOB);
    }
    const chainId = Number(i.chain_id);
    await queueOn(ctx, chainId).enqueue(tx, { kind: ITEM_URI_JOB, ref: uid, payload: {} });
    await saveAnswer(tx, idem, null);
    return () => queueOn(ctx, chainId).notify(ITEM_URI_JOB);
  });
  queued();
  return null;
}

/** The document the metadata route serves for an item's token id, or null. */
export async function itemTokenMetadata(ctx: Ctx, collectionUid: string, tokenId: number): Promise<Record<string, unknown> | null> {
  const row = await ctx.db
    .selectFrom('items')
    .select('metadata')
    .where('collection_uid', '=', collectionUid)
    .where('token_id', '=', tokenId)
    .executeTakeFirst();
  return row ? (JSON.parse(row.metadata) as Record<string, unknown>) : null;
}
