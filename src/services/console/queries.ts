// The console's reads: lists with keyset pagination (newest first, a cursor instead of an offset, so a
// page costs the same on the first page and the thousandth), an App's counts and activity, and the
// detail pages of users and assets. Writes go through the services the API uses.
import { getAddress } from 'viem';
import { sql, type Selectable } from 'kysely';
import type { Ctx } from '../context.js';
import type { AssetTable } from '../../store/schema.js';
import { ApiError } from '../../util/errors.js';
import { chainOf, userView, type WalletRow } from '../views.js';
import { walletsOf } from '../users/users.js';
import { listBurns, listTransfers } from '../assets/lifecycle/index.js';
import { userAssetUids } from '../assets/reads.js';
import { deliveriesOf } from '../../webhooks/deliveries.js';
import { listAllocationsOfUser, listClaimsOfUser } from '../rewards/index.js';
import { allocationView, claimView } from '../rewards/views.js';
import { collectionView } from '../views.js';
import { isoOfMs } from '../../webhooks/message.js';
import { isUtf8 } from 'node:buffer';
import { isStorableText } from '../../domain/text.js';
import type {
  AllocationRow,
  ClaimRow,
  Activity,
  ActivityRange,
  AppCounts,
  AppSummary,
  AssetDetail,
  AssetRow,
  AssetStatus,
  CollectionRow,
  DeliveryRow,
  HistoryItem,
  Page,
  TxRow,
  UserDetail,
  UserRow,
} from './types.js';

export const ASSET_STATUSES = ['not_minted', 'minted', 'transferring', 'burning', 'burned', 'failed'] as const satisfies readonly AssetStatus[];

// ------------------------------------------------------------------------------------------ cursors

type CursorValue = string | number;

export function encodeCursor(values: CursorValue[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

/** The values of a cursor of the given shape ('s' string, 'n' number), or a 400 naming the cursor. */
export function decodeCursor(cursor: string, shape: ('s' | 'n')[]): CursorValue[] {
  try {
    const bytes = Buffer.from(cursor, 'base64url');
    if (!isUtf8(bytes)) throw new Error('not UTF-8'); // would decode to U+FFFD: not what was encoded
    const v = JSON.parse(bytes.toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === shape.length && v.every((x, i) => (shape[i] === 's' ? typeof x === 'string' && isStorableText(x) : typeof x === 'number' && Number.isFinite(x)))) return v as CursorValue[];
  } catch {
    // answered below
  }
  throw ApiError.validation([{ field: 'cursor', code: 'invalid', message: 'Invalid cursor: take next_cursor from the previous page.' }]);
}

/** Splits the `limit + 1` rows read into a page and the cursor of the next one. */
function pageOf<R, T>(rows: R[], limit: number, view: (r: R) => T, cursorOf: (r: R) => CursorValue[]): Page<T> {
  const more = rows.length > limit;
  const items = more ? rows.slice(0, limit) : rows;
  return { items: items.map(view), next_cursor: more ? encodeCursor(cursorOf(items[items.length - 1])) : null };
}

// --------------------------------------------------------------------------------------------- apps

export async function listAppSummaries(ctx: Ctx): Promise<AppSummary[]> {
  const apps = await ctx.db.selectFrom('apps').selectAll().orderBy('created_at', 'desc').orderBy('uid', 'desc').execute();
  const keys = await ctx.db.selectFrom('api_keys').select(['app_uid', 'api_key', 'created_at']).where('revoked_at', 'is', null).orderBy('created_at', 'asc').execute();
  const keyOf = new Map(keys.map((k) => [k.app_uid, k.api_key])); // the newest wins
  return apps.map((a) => ({ uid: a.uid, name: a.name, environment: a.environment, created_at: a.created_at, api_key: keyOf.get(a.uid) ?? null }));
}

export async function appSummary(ctx: Ctx, uid: string): Promise<AppSummary> {
  const a = await ctx.db.selectFrom('apps').selectAll().where('uid', '=', uid).executeTakeFirst();
  if (!a) throw ApiError.notFound('App');
  const k = await ctx.db.selectFrom('api_keys').select('api_key').where('app_uid', '=', uid).where('revoked_at', 'is', null).orderBy('created_at', 'desc').executeTakeFirst();
  return { uid: a.uid, name: a.name, environment: a.environment, created_at: a.created_at, api_key: k?.api_key ?? null };
}

const count = (n: unknown) => Number(n ?? 0);

export async function appCounts(ctx: Ctx, appUid: string): Promise<AppCounts> {
  const db = ctx.db;
  const countOf = async (table: 'users' | 'collections' | 'burns' | 'rewards' | 'allocations' | 'claims') =>
    count((await db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).where('app_uid', '=', appUid).executeTakeFirstOrThrow()).n);
  const [users, collections, burns, rewards, allocations, claims, assets, transfers, failing] = await Promise.all([
    countOf('users'),
    countOf('collections'),
    countOf('burns'),
    countOf('rewards'),
    countOf('allocations'),
    countOf('claims'),
    db
      .selectFrom('assets')
      .select(['mint_status', (eb) => eb.fn.countAll().as('n'), (eb) => eb.fn.sum<number>('is_burned').as('burned')])
      .where('app_uid', '=', appUid)
      .groupBy('mint_status')
      .execute(),
    db.selectFrom('transfers').select(['status', (eb) => eb.fn.countAll().as('n')]).where('app_uid', '=', appUid).groupBy('status').execute(),
    db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll().as('n')).where('app_uid', '=', appUid).where('status', '=', 'pending').where('attempts', '>', 0).executeTakeFirstOrThrow(),
  ]);
  const byStatus = (s: string) => count(assets.find((r) => r.mint_status === s)?.n);
  return {
    users,
    collections,
    assets: assets.reduce((n, r) => n + count(r.n), 0),
    assets_minted: byStatus('minted'),
    assets_pending: byStatus('pending'),
    assets_failed: byStatus('failed'),
    assets_burned: assets.reduce((n, r) => n + count(r.burned), 0),
    transfers: transfers.reduce((n, r) => n + count(r.n), 0),
    transfers_pending: count(transfers.find((r) => r.status === 'pending')?.n),
    burns,
    rewards,
    allocations,
    claims,
    webhook_failing: count(failing.n),
  };
}

/**
 * Minted assets and their sale prices per hour (last 24 h) or per day (last 30 days), by the time the
 * assets were created (a mint follows within seconds). Empty buckets are included.
 */
export async function appActivity(ctx: Ctx, appUid: string, range: ActivityRange, now = Date.now()): Promise<Activity> {
  const hourly = range === '24h';
  const step = hourly ? 3600_000 : 86_400_000;
  const buckets = hourly ? 24 : 30;
  const last = Math.floor(now / step) * step;
  const first = last - (buckets - 1) * step;
  const len = hourly ? 13 : 10; // 'YYYY-MM-DDTHH' | 'YYYY-MM-DD'
  const bucket = sql<string>`substr(created_at, 1, ${sql.lit(len)})`;
  const rows = await ctx.db
    .selectFrom('assets')
    .select([
      bucket.as('b'),
      (eb) => eb.fn.countAll().as('mints'),
      sql<string | number | null>`sum(cast(sale_price_in_usd as numeric))`.as('sales'),
    ])
    .where('app_uid', '=', appUid)
    .where('created_at', '>=', new Date(first).toISOString())
    .where('mint_status', '=', 'minted')
    .groupBy(bucket)
    .execute();
  const byBucket = new Map(rows.map((r) => [r.b, r]));
  const points = [];
  for (let t = first; t <= last; t += step) {
    const r = byBucket.get(new Date(t).toISOString().slice(0, len));
    points.push({ t: new Date(t).toISOString(), mints: count(r?.mints), sales_usd: Math.round(Number(r?.sales ?? 0) * 100) / 100 });
  }
  return { range, bucket: hourly ? 'hour' : 'day', points };
}

// -------------------------------------------------------------------------------------------- users

const checksum = (a: string) => getAddress(a);

function userRow(u: Parameters<typeof userView>[0], ctx: Ctx, wallets: WalletRow[]): UserRow {
  const v = userView(u, wallets, ctx.config);
  return { uid: v.uid, email: v.email, user_external_id: v.user_external_id, wallets: v.wallets.map((w) => ({ address: w.address!, explorer_url: w.explorer_url })), created_at: v.created_at, wallet_exported_at: u.wallet_exported_at };
}

/** The next string after every string that starts with `prefix` (for an index range scan). */
function prefixEnd(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

export async function listUsers(ctx: Ctx, appUid: string, q: { cursor?: string; limit: number; search?: string }): Promise<Page<UserRow>> {
  const base = () => ctx.db.selectFrom('users').selectAll().where('app_uid', '=', appUid);
  const search = q.search?.trim();
  if (search) {
    // Exact uid, email or external id, then emails and external ids that start with it: each an index lookup.
    const end = prefixEnd(search);
    const found = await Promise.all([
      base().where('uid', '=', search).execute(),
      base().where('email', '>=', search).where('email', '<', end).orderBy('email').limit(q.limit).execute(),
      base().where('user_external_id', '>=', search).where('user_external_id', '<', end).orderBy('user_external_id').limit(q.limit).execute(),
    ]);
    const seen = new Map<string, (typeof found)[0][0]>();
    for (const u of found.flat()) {
      if (u.uid === search || u.email?.startsWith(search) || u.user_external_id?.startsWith(search)) seen.set(u.uid, u);
    }
    const rows = [...seen.values()].sort((a, b) => (a.created_at < b.created_at ? 1 : -1)).slice(0, q.limit);
    const wallets = await walletsOf(ctx.db, rows.map((u) => u.uid));
    return { items: rows.map((u) => userRow(u, ctx, wallets)), next_cursor: null };
  }
  let qb = base();
  if (q.cursor) {
    const [at, uid] = decodeCursor(q.cursor, ['s', 's']);
    qb = qb.where((eb) => eb(eb.refTuple('created_at', 'uid'), '<', eb.tuple(at as string, uid as string)));
  }
  const rows = await qb.orderBy('created_at', 'desc').orderBy('uid', 'desc').limit(q.limit + 1).execute();
  const wallets = await walletsOf(ctx.db, rows.map((u) => u.uid));
  return pageOf(rows, q.limit, (u) => userRow(u, ctx, wallets), (u) => [u.created_at, u.uid]);
}

/** The newest assets a user's page shows. */
const USER_PAGE_ASSETS = 500;

export async function userDetail(ctx: Ctx, appUid: string, userUid: string): Promise<UserDetail> {
  const u = await ctx.db.selectFrom('users').selectAll().where('app_uid', '=', appUid).where('uid', '=', userUid).executeTakeFirst();
  if (!u) throw ApiError.client(404, 'not_found', 'User not found.');
  const [assets, transfers, burns, allocations, claims] = await Promise.all([
    assetRows(ctx)
      .where('assets.uid', 'in', userAssetUids(appUid, userUid, { limit: USER_PAGE_ASSETS }, { unburned: false })) // as the API's list, burned ones too
      .orderBy('assets.created_at', 'desc')
      .orderBy('assets.uid', 'desc')
      .limit(USER_PAGE_ASSETS)
      .execute(),
    listTransfers(ctx, appUid, userUid).then((p) => p.items),
    listBurns(ctx, appUid, userUid).then((p) => p.items),
    listAllocationsOfUser(ctx, appUid, userUid).then((p) => p.items),
    listClaimsOfUser(ctx, appUid, userUid).then((p) => p.items),
  ]);
  // Amounts are ExactNumbers here, numbers once the browser has parsed the answer (domain/exact-json.ts).
  return { user: userRow(u, ctx, await walletsOf(ctx.db, [u.uid])), assets: assets.map(assetRow), transfers, burns, allocations: allocations as unknown as AllocationRow[], claims: claims as unknown as ClaimRow[] };
}

// ------------------------------------------------------------------------------------------- assets

function assetRows(ctx: Ctx) {
  return ctx.db
    .selectFrom('assets')
    .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
    .select([
      'assets.uid',
      'assets.name',
      'assets.asset_external_id',
      'assets.collection_uid',
      'assets.token_id',
      'assets.mint_status',
      'assets.mint_error',
      'assets.is_burned',
      'assets.is_burning',
      'assets.is_transferring',
      'assets.owner_user_uid',
      'assets.owner_address',
      'assets.metadata',
      'assets.created_at',
      'collections.name as collection_name',
    ]);
}

type AssetListRow = Pick<Selectable<AssetTable>, 'uid' | 'name' | 'asset_external_id' | 'collection_uid' | 'token_id' | 'mint_status' | 'mint_error' | 'is_burned' | 'is_burning' | 'is_transferring' | 'owner_user_uid' | 'owner_address' | 'metadata' | 'created_at'> & { collection_name: string };

export function assetStatus(a: Pick<Selectable<AssetTable>, 'mint_status' | 'is_burned' | 'is_burning' | 'is_transferring'>): AssetStatus {
  if (a.mint_status === 'failed') return 'failed';
  if (a.mint_status === 'pending') return 'not_minted';
  if (a.is_burned) return 'burned';
  if (a.is_burning) return 'burning';
  if (a.is_transferring) return 'transferring';
  return 'minted';
}

/** The metadata's image as something the console can load: ipfs:// through this service's gateway. */
export function imageUrl(metadata: Record<string, unknown>): string | null {
  const img = metadata.image ?? metadata.image_url;
  if (typeof img !== 'string' || img === '') return null;
  if (img.startsWith('ipfs://')) return `/ipfs/${img.slice('ipfs://'.length).replace(/^ipfs\//, '')}`;
  if (/^https?:\/\//i.test(img) || img.startsWith('/')) return img;
  return null;
}

function parseMetadata(text: string): Record<string, unknown> {
  try {
    const m = JSON.parse(text) as unknown;
    return m && typeof m === 'object' && !Array.isArray(m) ? (m as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function assetRow(a: AssetListRow): AssetRow {
  const minted = a.mint_status === 'minted';
  return {
    uid: a.uid,
    name: a.name,
    asset_external_id: a.asset_external_id,
    image: imageUrl(parseMetadata(a.metadata)),
    token_id: Number(a.token_id),
    collection_uid: a.collection_uid,
    collection_name: a.collection_name,
    owner_user_uid: minted ? a.owner_user_uid : null,
    owner_address: minted && a.owner_address ? checksum(a.owner_address) : null,
    status: assetStatus(a),
    error: a.mint_status === 'failed' ? a.mint_error : null,
    created_at: a.created_at,
  };
}

export interface AssetQuery {
  cursor?: string;
  limit: number;
  collection?: string;
  status?: AssetStatus;
  search?: string;
}

/**
 * An App's assets, newest first; filtered by a collection they are read by token id (newest first
 * too: token ids are handed out at creation, in order).
 */
export async function listAssets(ctx: Ctx, appUid: string, q: AssetQuery): Promise<Page<AssetRow>> {
  let qb = assetRows(ctx).where('assets.app_uid', '=', appUid);
  switch (q.status) {
    case 'not_minted':
      qb = qb.where('assets.mint_status', '=', 'pending');
      break;
    // Rare statuses, as literals: each has a partial index of its own (migration 018), which a
    // planner uses only when the query names the indexed value itself.
    case 'failed':
      qb = qb.where('assets.mint_status', '=', sql.lit('failed'));
      break;
    case 'burned':
      qb = qb.where('assets.is_burned', '=', sql.lit(1));
      break;
    case 'burning':
      qb = qb.where('assets.is_burning', '=', sql.lit(1)).where('assets.is_burned', '=', 0);
      break;
    case 'transferring':
      qb = qb.where('assets.is_transferring', '=', sql.lit(1));
      break;
    case 'minted':
      qb = qb.where('assets.mint_status', '=', 'minted').where('assets.is_burned', '=', 0).where('assets.is_burning', '=', 0).where('assets.is_transferring', '=', 0);
      break;
  }
  const search = q.search?.trim();
  if (search) {
    const rows = await qb.where((eb) => eb.or([eb('assets.uid', '=', search), eb('assets.asset_external_id', '=', search)])).limit(q.limit).execute();
    return { items: rows.map(assetRow), next_cursor: null };
  }
  if (q.collection) {
    qb = qb.where('assets.collection_uid', '=', q.collection);
    if (q.cursor) qb = qb.where('assets.token_id', '<', decodeCursor(q.cursor, ['n'])[0] as number);
    const rows = await qb.orderBy('assets.token_id', 'desc').limit(q.limit + 1).execute();
    return pageOf(rows, q.limit, assetRow, (a) => [Number(a.token_id)]);
  }
  if (q.cursor) {
    const [at, uid] = decodeCursor(q.cursor, ['s', 's']);
    qb = qb.where((eb) => eb(eb.refTuple('assets.created_at', 'assets.uid'), '<', eb.tuple(at as string, uid as string)));
  }
  const rows = await qb.orderBy('assets.created_at', 'desc').orderBy('assets.uid', 'desc').limit(q.limit + 1).execute();
  return pageOf(rows, q.limit, assetRow, (a) => [a.created_at, a.uid]);
}

const TX_LABEL: Record<string, string> = { 'asset.mint': 'mint', 'asset.edit': 'edit', forward: 'transfer or burn' };

export async function assetDetail(ctx: Ctx, appUid: string, assetUid: string): Promise<AssetDetail> {
  const a = await ctx.db
    .selectFrom('assets')
    .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
    .selectAll('assets')
    .select(['collections.name as collection_name', 'collections.contract_address', 'collections.status as collection_status', 'collections.chain_id'])
    .where('assets.uid', '=', assetUid)
    .where('assets.app_uid', '=', appUid)
    .executeTakeFirst();
  if (!a) throw ApiError.notFound('Asset');
  const explorer = chainOf(ctx.config, a.chain_id).explorer;
  const [transfers, burns, editTxs, mintTx] = await Promise.all([
    ctx.db.selectFrom('transfers').selectAll().where('asset_uid', '=', a.uid).orderBy('created_at').execute(),
    ctx.db.selectFrom('burns').selectAll().where('asset_uid', '=', a.uid).orderBy('created_at').execute(),
    ctx.db.selectFrom('chain_txs').selectAll().where('kind', '=', 'asset.edit').where('ref', '=', a.uid).execute(),
    a.mint_tx_id === null ? Promise.resolve(undefined) : ctx.db.selectFrom('chain_txs').selectAll().where('id', '=', a.mint_tx_id).executeTakeFirst(),
  ]);
  // Transfers and burns are relayed in batches named after their first request: find the batches that
  // carry this asset's requests by the requests' uids.
  const actionUids = [...transfers.map((t) => t.uid), ...burns.map((b) => b.uid)];
  const forwardTxs = actionUids.length
    ? await ctx.db
        .selectFrom('chain_txs')
        .selectAll()
        .where('kind', '=', 'forward')
        .where('created_at', '>=', Math.min(...[...transfers, ...burns].map((r) => Date.parse(r.created_at))) - 1000)
        .where((eb) => eb.or([eb('ref', 'in', actionUids), ...actionUids.map((u) => eb('payload', 'like', `%"uid":"${u}"%`))]))
        .execute()
    : [];
  const txs = [...(mintTx ? [mintTx] : []), ...editTxs, ...forwardTxs].sort((x, y) => x.created_at - y.created_at);
  const actionOf = new Map<string, string>([...transfers.map((r) => [r.uid, 'transfer'] as const), ...burns.map((r) => [r.uid, 'burn'] as const)]);
  const kindOf = (t: (typeof txs)[number]) => {
    if (t.kind !== 'forward') return TX_LABEL[t.kind] ?? t.kind;
    const items = (JSON.parse(t.payload) as { items?: { uid: string }[] }).items ?? [];
    return items.map((i) => actionOf.get(i.uid)).find(Boolean) ?? TX_LABEL.forward;
  };
  const transactions: TxRow[] = txs.map((t) => ({
    kind: kindOf(t),
    hash: t.hash,
    status: t.status,
    block_number: t.block_number === null ? null : Number(t.block_number),
    from: checksum(t.from_address),
    explorer_url: `${explorer}/tx/${t.hash}`,
    error: t.error,
    time: isoOfMs(t.created_at),
  }));

  const history: HistoryItem[] = [{ time: a.created_at, event: 'created', detail: `token id ${a.token_id} for user ${a.mint_for_user_uid}` }];
  if (mintTx) history.push({ time: isoOfMs(mintTx.created_at), event: 'mint sent', detail: mintTx.hash });
  if (a.mint_status === 'minted') history.push({ time: mintTx ? isoOfMs(mintTx.updated_at) : a.updated_at, event: 'minted', detail: a.mint_for_address ? `to ${checksum(a.mint_for_address)}` : null });
  if (a.mint_status === 'failed') history.push({ time: a.updated_at, event: 'mint failed', detail: a.mint_error });
  for (const t of transfers) {
    history.push({ time: t.created_at, event: 'transfer requested', detail: `by ${t.from_user_uid} to ${checksum(t.to_address)}` });
    if (t.status !== 'pending') history.push({ time: t.updated_at, event: t.status === 'done' ? 'transferred' : 'transfer cancelled', detail: t.status === 'done' ? `to ${checksum(t.to_address)}` : t.reason });
  }
  for (const b of burns) {
    history.push({ time: b.created_at, event: 'burn requested', detail: `by ${b.from_user_uid}` });
    if (b.status !== 'pending') history.push({ time: b.updated_at, event: b.status === 'done' ? 'burned' : 'burn cancelled', detail: b.reason });
  }
  for (const e of editTxs) history.push({ time: isoOfMs(e.created_at), event: 'edited', detail: e.status === 'mined' ? 'metadata updated on chain' : `metadata update ${e.status}` });
  history.sort((x, y) => (x.time < y.time ? -1 : x.time > y.time ? 1 : 0));

  const metadata = parseMetadata(a.metadata);
  const minted = a.mint_status === 'minted';
  const deployed = a.collection_status === 'deployed' && a.contract_address !== null;
  return {
    asset: {
      ...assetRow({ ...a, collection_name: a.collection_name }),
      metadata,
      token_uri: minted ? a.token_uri : null,
      mint_for_user_uid: a.mint_for_user_uid,
      sale_price_in_usd: a.sale_price_in_usd === null ? null : Number(a.sale_price_in_usd),
      explorer_url: minted && a.contract_address ? `${explorer}/token/${checksum(a.contract_address)}?a=${a.token_id}` : null,
    },
    collection: {
      uid: a.collection_uid,
      name: a.collection_name,
      contract_address: deployed ? checksum(a.contract_address!) : null,
      explorer_url: deployed ? `${explorer}/address/${checksum(a.contract_address!)}` : null,
    },
    transactions,
    history,
  };
}

// ------------------------------------------------------------------------------ collections, rewards

export async function listCollections(ctx: Ctx, appUid: string): Promise<CollectionRow[]> {
  const rows = await ctx.db.selectFrom('collections').selectAll().where('app_uid', '=', appUid).orderBy('created_at', 'desc').orderBy('uid', 'desc').execute();
  return rows.map((c) => {
    const v = collectionView(c, ctx.config);
    return { uid: v.uid, name: v.name, symbol: v.symbol, description: v.description, editable_assets: v.editable_assets, status: v.status as CollectionRow['status'], contract_address: v.contract_address, explorer_url: v.explorer_url, created_at: v.created_at };
  });
}

async function requireReward(ctx: Ctx, appUid: string, rewardUid: string): Promise<void> {
  const r = await ctx.db.selectFrom('rewards').select('uid').where('uid', '=', rewardUid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!r) throw ApiError.notFound('Reward');
}

export async function listRewardAllocations(ctx: Ctx, appUid: string, rewardUid: string, q: { cursor?: string; limit: number }) {
  await requireReward(ctx, appUid, rewardUid);
  let qb = ctx.db.selectFrom('allocations').selectAll().where('reward_uid', '=', rewardUid);
  if (q.cursor) {
    const [at, uid] = decodeCursor(q.cursor, ['s', 's']);
    qb = qb.where((eb) => eb(eb.refTuple('created_at', 'uid'), '<', eb.tuple(at as string, uid as string)));
  }
  const rows = await qb.orderBy('created_at', 'desc').orderBy('uid', 'desc').limit(q.limit + 1).execute();
  return pageOf(rows, q.limit, allocationView, (r) => [r.created_at, r.uid]);
}

export async function listRewardClaims(ctx: Ctx, appUid: string, rewardUid: string, q: { cursor?: string; limit: number }) {
  await requireReward(ctx, appUid, rewardUid);
  let qb = ctx.db.selectFrom('claims').selectAll().where('reward_uid', '=', rewardUid);
  if (q.cursor) {
    const [at, uid] = decodeCursor(q.cursor, ['s', 's']);
    qb = qb.where((eb) => eb(eb.refTuple('created_at', 'uid'), '<', eb.tuple(at as string, uid as string)));
  }
  const rows = await qb.orderBy('created_at', 'desc').orderBy('uid', 'desc').limit(q.limit + 1).execute();
  return pageOf(rows, q.limit, claimView, (r) => [r.created_at, r.uid]);
}

// ------------------------------------------------------------------------------------------ webhook

/** The delivery log: one row per event sent (or to send) to the App's webhook, newest first. */
export async function deliveryLog(ctx: Ctx, appUid: string, q: { cursor?: string; limit: number; status?: DeliveryRow['status']; eventId?: string }): Promise<Page<DeliveryRow>> {
  let qb = deliveriesOf(ctx, appUid);
  if (q.status) qb = qb.where('d.status', '=', q.status);
  if (q.eventId) qb = qb.where('d.event_id', '=', q.eventId);
  if (q.cursor) {
    const [ms, id] = decodeCursor(q.cursor, ['n', 's']);
    qb = qb.where((eb) => eb(eb.refTuple('d.event_time_ms', 'd.event_id'), '<', eb.tuple(ms as number, id as string)));
  }
  const rows = await qb.orderBy('d.event_time_ms', 'desc').orderBy('d.event_id', 'desc').limit(q.limit + 1).execute();
  const shown = rows.slice(0, q.limit);
  const last = new Map<string, string | null>();
  if (shown.length) {
    const attempts = await ctx.db
      .selectFrom('webhook_attempts')
      .select(['event_id', 'response_body'])
      .where('event_id', 'in', shown.map((r) => r.event_id))
      .orderBy('id', 'desc')
      .execute();
    for (const a of attempts) if (!last.has(a.event_id)) last.set(a.event_id, a.response_body);
  }
  const iso = (ms: number | null) => (ms === null ? null : isoOfMs(ms));
  return pageOf(
    rows,
    q.limit,
    (r): DeliveryRow => ({
      event_id: r.event_id,
      event: r.event_type,
      event_time: r.event_time,
      status: r.status,
      attempts: r.attempts,
      next_attempt_at: r.status === 'pending' ? iso(r.next_attempt_at) : null,
      last_attempt_at: iso(r.last_attempt_at),
      last_status_code: r.last_status_code,
      last_error: r.last_error,
      last_response: last.get(r.event_id) ?? null,
    }),
    (r) => [Number(r.event_time_ms), r.event_id],
  );
}

