// Reads of assets: one asset of an App, a page of a user's assets, and the metadata document behind a
// token URI.
import { sql, type ExpressionBuilder } from 'kysely';
import type { Database } from '../../store/schema.js';
import type { Ctx } from '../context.js';
import type { DbOrTx } from '../../store/db.js';
import { precompiled } from '../../store/precompiled.js';
import { ApiError } from '../../util/errors.js';
import { assetJson, assetView, assetViewColumns, type AssetViewRow } from '../asset-view.js';
import { encodeCursor, keysetPage, pageOf, pageSize, type Page, type PageRequest } from '../requests/pages.js';
import type { AssetReads } from './cache.js';

/** Asset rows with what their API view needs of the collection: only the columns the view prints. */
function withCollection(db: DbOrTx) {
  return db
    .selectFrom('assets')
    .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
    .select(assetViewColumns.map((c) => `assets.${c}` as const))
    .select(['collections.name as collection_name', 'collections.contract_address', 'collections.chain_id']);
}

type AssetWithCollection = AssetViewRow & { collection_name: string; contract_address: string | null; chain_id: number };
const collectionOf = (r: AssetWithCollection) => ({ name: r.collection_name, contract_address: r.contract_address, chain_id: r.chain_id });

const assetOfApp = precompiled(2, (db, uid, appUid) => withCollection(db).where('assets.uid', '=', uid).where('assets.app_uid', '=', appUid));

async function assetRow(db: DbOrTx, appUid: string, uid: string): Promise<AssetWithCollection> {
  const [row] = await assetOfApp(db, uid, appUid);
  if (!row) throw ApiError.notFound('Asset');
  return row;
}

export async function getAsset(ctx: Ctx, appUid: string, uid: string, db: DbOrTx = ctx.db) {
  const row = await assetRow(db, appUid, uid);
  return assetView(row, collectionOf(row), ctx.installation);
}

/**
 * The cache of asset objects (./cache.ts) as the service keeps them: each object's JSON as a string
 * (GET /asset/<uid> writes it with its headers in one write), and pages joined whole as the UTF-8 bytes
 * of their answer, written without encoding anything again (a page of 1,000 is about 700 KB).
 */
export type AssetJsonCache = AssetReads<string, Buffer>;

const jsonOf = (r: AssetWithCollection, ctx: Ctx): string => assetJson(r, collectionOf(r), ctx.installation);

/** The asset's object as JSON (what GET /asset/<uid> answers). */
export async function getAssetJson(ctx: Ctx, appUid: string, uid: string): Promise<string> {
  return jsonOf(await assetRow(ctx.db, appUid, uid), ctx);
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

/**
 * What a page's read returns of each asset: the view's columns with the collection's, its keys, or its
 * uid alone.
 */
type PageRows = 'view' | 'keys' | 'uids';
const PAGE_COLUMNS = { view: assetViewColumns, keys: ['uid', 'created_at'], uids: ['uid'] } as const;

/**
 * The two halves of a page of a user's assets (these two functions), each reading its own index newest
 * first for a page's worth of rows after the cursor: what they own, and what is still on its way to
 * them. Disjoint: an asset on its way to the user that the user also owns is in the first only.
 */
function ownedHalf(db: DbOrTx, appUid: string, userUid: string, page: PageRequest, rows: PageRows) {
  const owned = db
    .selectFrom('assets as owned')
    .select(PAGE_COLUMNS[rows].map((c) => `owned.${c}` as const))
    .where('owned.app_uid', '=', appUid)
    .where('owned.owner_user_uid', '=', userUid)
    .where('owned.is_burned', '=', 0);
  return keysetPage(owned, 'owned', page);
}

function comingHalf(db: DbOrTx, appUid: string, userUid: string, page: PageRequest, rows: PageRows) {
  const coming = db
    .selectFrom('assets as coming')
    .select(PAGE_COLUMNS[rows].map((c) => `coming.${c}` as const))
    .where('coming.app_uid', '=', appUid)
    .where('coming.mint_for_user_uid', '=', userUid)
    .where('coming.mint_status', '!=', sql.lit('minted'))
    .where('coming.is_burned', '=', 0)
    .where((eb) => eb.or([eb('coming.owner_user_uid', 'is', null), eb('coming.owner_user_uid', '!=', userUid)]));
  return keysetPage(coming, 'coming', page);
}

/**
 * The statement of a page of a user's assets with every column the view prints (read in the halves:
 * looking each row up again by uid cost a third of the page) and the collection's: the halves united
 * and cut to the page.
 */
export function userAssetsPage(db: DbOrTx, appUid: string, userUid: string, page: PageRequest) {
  const owned = ownedHalf(db, appUid, userUid, page, 'view');
  const coming = comingHalf(db, appUid, userUid, page, 'view');
  // Each half in a subquery of its own: a part of a UNION may not have its own ORDER BY and LIMIT.
  const both = db
    .selectFrom(owned.as('o'))
    .selectAll('o')
    .unionAll(db.selectFrom(coming.as('c')).selectAll('c'));
  const q = db
    .selectFrom(both.as('u'))
    .innerJoin('collections', 'collections.uid', 'u.collection_uid')
    .selectAll('u')
    .select(['collections.name as collection_name', 'collections.contract_address', 'collections.chain_id']);
  // Both halves start after the cursor already: the union is only ordered and cut.
  return keysetPage(q, 'u', { limit: page.limit }).compile();
}

/** A part of a page's keys, read apart: a half's keys (uid, created_at), or the owned half's uids alone. */
type KeyPart = 'owned' | 'coming' | 'ownedUids';

/**
 * The statement of a part of a page's keys. Read apart and merged here: united in SQL, SQLite sorted
 * each half again in a temporary B-tree to merge them (a page of 1,000: 2.3 ms united; the owned
 * half's uids alone, from the owner index that covers them, 0.85 ms).
 */
export function userAssetKeyPart(db: DbOrTx, appUid: string, userUid: string, page: PageRequest, part: KeyPart) {
  if (part === 'coming') return comingHalf(db, appUid, userUid, page, 'keys').compile();
  return ownedHalf(db, appUid, userUid, page, part === 'ownedUids' ? 'uids' : 'keys').compile();
}

type AssetKey = { uid: string; created_at: string };

/**
 * Two lists each newest first by (created_at, uid), merged into one, at most `max` long; an asset in
 * both (minted between the reads of the halves: its keys are equal) once.
 */
export function mergeNewestFirst(a: AssetKey[], b: AssetKey[], max: number): AssetKey[] {
  if (b.length === 0) return a.length > max ? a.slice(0, max) : a;
  const out: AssetKey[] = [];
  let i = 0;
  let j = 0;
  while (out.length < max && (i < a.length || j < b.length)) {
    const x = a[i];
    const y = b[j];
    if (x !== undefined && y !== undefined && x.uid === y.uid) {
      out.push(x);
      i++;
      j++;
      continue;
    }
    const xFirst = y === undefined || (x !== undefined && (x.created_at > y.created_at || (x.created_at === y.created_at && x.uid > y.uid)));
    out.push(xFirst ? a[i++] : b[j++]);
  }
  return out;
}

/**
 * First pages (what Apps poll), compiled once per page size: building a statement cost more than
 * SQLite's run of it. On PostgreSQL they are named statements (store/postgres/prepared.ts): planning
 * anew cost the server several times the run. Their one plan, made for "a user", reads the user's own
 * indexes whatever the App's data: migration 022 tells the planner that a user holds a small share of
 * the assets, which it cannot learn from an installation of few users.
 */
type PagePart = 'view' | KeyPart;
const firstPages = new Map<string, ReturnType<typeof firstPageOf>>(); // at most four per page size
const firstPageOf = (limit: number | undefined, part: PagePart) =>
  precompiled(2, (db, appUid, userUid) => ({
    compile: () => (part === 'view' ? userAssetsPage(db, appUid, userUid, { limit }) : userAssetKeyPart(db, appUid, userUid, { limit }, part)),
  }));

/** A part of a page of a user's assets: the first page's compiled once per page size, the others built. */
async function readPart<R>(ctx: Ctx, appUid: string, userUid: string, page: PageRequest, part: PagePart): Promise<R[]> {
  if (page.cursor) {
    const q = part === 'view' ? userAssetsPage(ctx.db, appUid, userUid, page) : userAssetKeyPart(ctx.db, appUid, userUid, page, part);
    return (await ctx.db.executeQuery<R>(q)).rows;
  }
  const key = `${page.limit}:${part}`;
  let read = firstPages.get(key);
  if (!read) firstPages.set(key, (read = firstPageOf(page.limit, part)));
  return (await read(ctx.db, appUid, userUid)) as R[];
}

const createdAtOf = precompiled(1, (db, uid) => db.selectFrom('assets').select('created_at').where('uid', '=', uid));

/**
 * The uids of a page of a user's assets, and the cursor after it. When nothing is on its way to the
 * user (the usual case for a big holder), the owned half is read as uids alone, and the last one's
 * time is looked up for the cursor: SQLite handing over 1,000 timestamps as strings cost as much as
 * the rest of the read.
 */
async function pageUids(ctx: Ctx, appUid: string, userUid: string, page: PageRequest): Promise<Page<string>> {
  // The halves are two reads, not one snapshot: what is on its way first, then what is owned. An asset
  // only ever moves from the first to the second (its mint), so one minted in between is read twice
  // (merged once) and never missed, as it would be read the other way round.
  const coming = await readPart<AssetKey>(ctx, appUid, userUid, page, 'coming');
  if (coming.length > 0) {
    const owned = await readPart<AssetKey>(ctx, appUid, userUid, page, 'owned');
    return pageOf(mergeNewestFirst(owned, coming, pageSize(page) + 1), page, (r) => r.uid);
  }
  const owned = await readPart<{ uid: string }>(ctx, appUid, userUid, page, 'ownedUids');
  const limit = pageSize(page);
  if (owned.length <= limit) return { items: owned.map((r) => r.uid), next: null };
  const last = owned[limit - 1].uid;
  const [at] = await createdAtOf(ctx.db, last);
  // Gone since (deleted with its App): the page is read again as keys.
  if (!at) return pageOf(await readPart<AssetKey>(ctx, appUid, userUid, page, 'owned'), page, (r) => r.uid);
  return { items: owned.slice(0, limit).map((r) => r.uid), next: encodeCursor([at.created_at, last]) };
}

/** A page of asset objects as the bytes of its answer, and the cursor of the next page. */
export interface JsonPage {
  json: Buffer;
  next: string | null;
}

/**
 * Assets currently owned by a user, a page at a time (newest first); none for an unknown user. `join`
 * makes the answer's bytes of the page's objects (their JSON, UTF-8). With `cache`, the page's uids are
 * read and the objects come from it (those unchanged since they were last written), or the whole
 * answer when the page is the same as last time; else the page is read whole.
 */
export async function listAssetsOfUser(
  ctx: Ctx,
  appUid: string,
  userUid: string,
  page: PageRequest,
  join: (objects: string[]) => Buffer,
  cache: AssetJsonCache | null = null,
): Promise<JsonPage> {
  if (!cache) {
    const rows = pageOf(await readPart<AssetWithCollection>(ctx, appUid, userUid, page, 'view'), page, (r) => jsonOf(r, ctx));
    return { json: join(rows.items), next: rows.next };
  }
  const keys = await pageUids(ctx, appUid, userUid, page);
  const key = `${userUid}:${page.limit ?? ''}:${page.cursor ?? ''}`;
  return { json: await cache.page(appUid, key, keys.items, join), next: keys.next };
}

/** Assets read by uid in groups of this many: one statement text (the last uid repeats to fill a group). */
const BY_UID_GROUP = 100;
/**
 * By their uids alone, the App checked on the rows: with `app_uid = ?` beside the list, SQLite chose the
 * App's index over the primary key and read every asset of the App for each group (8.6 s for a page of
 * an App of 2M assets).
 */
const assetsByUid = precompiled(BY_UID_GROUP, (db, ...uids) => withCollection(db).select('assets.app_uid').where('assets.uid', 'in', uids));

/** The JSON of those of `uids` the App has, by uid (a page's assets missing from the cache). */
export async function assetJsonByUid(ctx: Ctx, appUid: string, uids: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (let i = 0; i < uids.length; i += BY_UID_GROUP) {
    const group = uids.slice(i, i + BY_UID_GROUP);
    while (group.length < BY_UID_GROUP) group.push(group[group.length - 1]);
    for (const r of await assetsByUid(ctx.db, ...group)) if (r.app_uid === appUid) out.set(r.uid, jsonOf(r, ctx));
  }
  return out;
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
