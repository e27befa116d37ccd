// Reads of assets: one asset of an App, a page of a user's assets, and the metadata document behind a
// token URI.
import { sql, type ExpressionBuilder } from 'kysely';
import type { Database } from '../../store/schema.js';
import type { Ctx } from '../context.js';
import type { DbOrTx } from '../../store/db.js';
import { precompiled } from '../../store/precompiled.js';
import { ApiError } from '../../util/errors.js';
import { assetView } from '../views.js';
import { keysetPage, pageOf, type PageRequest } from '../requests/pages.js';

/** Asset rows with what their API view needs of the collection. */
function withCollection(db: DbOrTx) {
  return db
    .selectFrom('assets')
    .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
    .selectAll('assets')
    .select(['collections.name as collection_name', 'collections.contract_address', 'collections.chain_id']);
}

const assetOfApp = precompiled(2, (db, uid, appUid) => withCollection(db).where('assets.uid', '=', uid).where('assets.app_uid', '=', appUid));

export async function getAsset(ctx: Ctx, appUid: string, uid: string, db: DbOrTx = ctx.db) {
  const [row] = await assetOfApp(db, uid, appUid);
  if (!row) throw ApiError.notFound('Asset');
  return assetView(row, { name: row.collection_name, contract_address: row.contract_address, chain_id: row.chain_id }, ctx.installation);
}

/**
 * The uids of the newest of a user's assets on a page (`page`: after its cursor, as many as it holds):
 * what they own, and what is still on its way to them (not minted yet: it will be theirs; the hosted
 * service lists it too). Two index lookups, united: as one OR, a planner may read every asset of the
 * App instead. Each reads its index newest first and stops after a page's worth, so a page costs the
 * same for a user with ten assets and one with a hundred thousand (united whole, every one of them was
 * read and sorted for each page). The literal lets both planners use the partial index of unminted
 * assets. `unburned`: without burned assets. For `where('assets.uid', 'in', userAssetUids(…))`, with
 * the same page applied to the outer query.
 */
export function userAssetUids(appUid: string, userUid: string, page: PageRequest, opts: { unburned: boolean }) {
  return (eb: ExpressionBuilder<Database, 'assets'>) => {
    let owned = eb
      .selectFrom('assets as owned')
      .select(['owned.uid', 'owned.created_at'])
      .where('owned.app_uid', '=', appUid)
      .where('owned.owner_user_uid', '=', userUid);
    if (opts.unburned) owned = owned.where('owned.is_burned', '=', 0);
    const coming = eb
      .selectFrom('assets as coming')
      .select(['coming.uid', 'coming.created_at'])
      .where('coming.app_uid', '=', appUid)
      .where('coming.mint_for_user_uid', '=', userUid)
      .where('coming.mint_status', '!=', sql.lit('minted'));
    // Each part in a subquery of its own: a part of a UNION may not have its own ORDER BY and LIMIT.
    return eb
      .selectFrom(keysetPage(owned, 'owned', page).as('o'))
      .select('o.uid')
      .unionAll(eb.selectFrom(keysetPage(coming, 'coming', page).as('c')).select('c.uid'));
  };
}

/** The statement of a page of a user's assets (with what their API view needs of the collection). */
export function userAssetsPage(db: DbOrTx, appUid: string, userUid: string, page: PageRequest) {
  const q = withCollection(db)
    .where('assets.uid', 'in', userAssetUids(appUid, userUid, page, { unburned: true }))
    .where('assets.is_burned', '=', 0);
  return keysetPage(q, 'assets', page).compile();
}

/**
 * The first page of a user's assets (what Apps poll), compiled once per page size: building it cost
 * more than SQLite's run of it. On PostgreSQL it is a named statement (store/postgres/prepared.ts):
 * planning this union anew cost the server several times its run. Its one plan, made for "a user",
 * reads the user's own indexes whatever the App's data: migration 022 tells the planner that a user
 * holds a small share of the assets, which it cannot learn from an installation of few users.
 */
const firstPages = new Map<number | undefined, ReturnType<typeof firstPageOf>>(); // at most one per page size
const firstPageOf = (limit: number | undefined) => precompiled(2, (db, appUid, userUid) => ({ compile: () => userAssetsPage(db, appUid, userUid, { limit }) }));

/** Assets currently owned by a user, a page at a time (newest first); none for an unknown user. */
export async function listAssetsOfUser(ctx: Ctx, appUid: string, userUid: string, page: PageRequest = {}) {
  let rows;
  if (page.cursor) rows = (await ctx.db.executeQuery(userAssetsPage(ctx.db, appUid, userUid, page))).rows;
  else {
    let read = firstPages.get(page.limit);
    if (!read) firstPages.set(page.limit, (read = firstPageOf(page.limit)));
    rows = await read(ctx.db, appUid, userUid);
  }
  return pageOf(rows, page, (r) => assetView(r, { name: r.collection_name, contract_address: r.contract_address, chain_id: r.chain_id }, ctx.installation));
}

/** The metadata document behind a token's URI (development Apps keep it in the service's storage). */
export async function tokenMetadata(ctx: Ctx, collectionUid: string, tokenId: number) {
  const row = await ctx.db
    .selectFrom('assets')
    .select(['metadata', 'is_burned'])
    .where('collection_uid', '=', collectionUid)
    .where('token_id', '=', tokenId)
    .executeTakeFirst();
  if (!row || row.is_burned) return null;
  return JSON.parse(row.metadata) as Record<string, unknown>;
}
