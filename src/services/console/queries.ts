// The console's reads: lists with keyset pagination (newest first, a cursor instead of an offset, so a
// page costs the same on the first page and the thousandth), an App's counts and activity, and the
// detail page of a user (assets: assets.ts). Writes go through the services the API uses.
import { sql } from 'kysely';
import type { Ctx } from '../context.js';
import { ApiError } from '../../util/errors.js';
import { userView, type WalletRow } from '../views.js';
import { walletsOf } from '../users/users.js';
import { listBurns, listTransfers } from '../assets/lifecycle/index.js';
import { userAssetUids } from '../assets/reads.js';
import { deliveriesOf, deliveryView } from '../../webhooks/deliveries.js';
import { keysetPageBy, pageOf } from '../requests/pages.js';
import { listAllocationsOfUser, listClaimsOfUser } from '../rewards/index.js';
import { allocationView, claimView } from '../rewards/views.js';
import { collectionView } from '../views.js';
import type {
  AllocationRow,
  ClaimRow,
  Activity,
  ActivityRange,
  AppCounts,
  AppSummary,
  CollectionRow,
  DeliveryRow,
  Page,
  UserDetail,
  UserRow,
} from './types.js';

import { HINT, NEWEST, consolePage } from './pages.js';
import { assetRow, assetRows } from './assets.js';

// --------------------------------------------------------------------------------------------- apps

export async function listAppSummaries(ctx: Ctx): Promise<AppSummary[]> {
  const apps = await ctx.db.selectFrom('apps').selectAll().orderBy('created_at', 'desc').orderBy('uid', 'desc').execute();
  const keys = await ctx.db
    .selectFrom('api_keys')
    .select(['app_uid', 'api_key', 'created_at'])
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'asc')
    .execute();
  const keyOf = new Map(keys.map((k) => [k.app_uid, k.api_key])); // the newest wins
  return apps.map((a) => ({ uid: a.uid, name: a.name, environment: a.environment, created_at: a.created_at, api_key: keyOf.get(a.uid) ?? null }));
}

export async function appSummary(ctx: Ctx, uid: string): Promise<AppSummary> {
  const a = await ctx.db.selectFrom('apps').selectAll().where('uid', '=', uid).executeTakeFirst();
  if (!a) throw ApiError.notFound('App');
  const k = await ctx.db
    .selectFrom('api_keys')
    .select('api_key')
    .where('app_uid', '=', uid)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  return { uid: a.uid, name: a.name, environment: a.environment, created_at: a.created_at, api_key: k?.api_key ?? null };
}

const count = (n: unknown) => Number(n ?? 0);

export async function appCounts(ctx: Ctx, appUid: string): Promise<AppCounts> {
  const db = ctx.db;
  const countOf = async (table: 'users' | 'collections' | 'burns' | 'rewards' | 'allocations' | 'claims') =>
    count(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .where('app_uid', '=', appUid)
          .executeTakeFirstOrThrow()
      ).n,
    );
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
    db
      .selectFrom('transfers')
      .select(['status', (eb) => eb.fn.countAll().as('n')])
      .where('app_uid', '=', appUid)
      .groupBy('status')
      .execute(),
    db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('app_uid', '=', appUid)
      .where('status', '=', 'pending')
      .where('attempts', '>', 0)
      .executeTakeFirstOrThrow(),
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
    .select([bucket.as('b'), (eb) => eb.fn.countAll().as('mints'), sql<string | number | null>`sum(cast(sale_price_in_usd as numeric))`.as('sales')])
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

function userRow(u: Parameters<typeof userView>[0], ctx: Ctx, wallets: WalletRow[]): UserRow {
  const v = userView(u, wallets, ctx.installation);
  return {
    uid: v.uid,
    email: v.email,
    user_external_id: v.user_external_id,
    wallets: v.wallets.map((w) => ({ address: w.address!, explorer_url: w.explorer_url })),
    created_at: v.created_at,
    wallet_exported_at: u.wallet_exported_at,
  };
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
    const wallets = await walletsOf(
      ctx.db,
      rows.map((u) => u.uid),
    );
    return { items: rows.map((u) => userRow(u, ctx, wallets)), next_cursor: null };
  }
  const rows = await keysetPageBy(base(), NEWEST('users'), q).execute();
  const wallets = await walletsOf(
    ctx.db,
    rows.map((u) => u.uid),
  );
  return consolePage(pageOf(rows, q, (u) => userRow(u, ctx, wallets)));
}

/** The newest assets a user's page shows. */
const USER_PAGE_ASSETS = 500;

export async function userDetail(ctx: Ctx, appUid: string, userUid: string): Promise<UserDetail> {
  const u = await ctx.db.selectFrom('users').selectAll().where('app_uid', '=', appUid).where('uid', '=', userUid).executeTakeFirst();
  if (!u) throw ApiError.notFound('User');
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
  return {
    user: userRow(u, ctx, await walletsOf(ctx.db, [u.uid])),
    assets: assets.map(assetRow),
    transfers,
    burns,
    allocations: allocations as unknown as AllocationRow[],
    claims: claims as unknown as ClaimRow[],
  };
}

// ------------------------------------------------------------------------------ collections, rewards

export async function listCollections(ctx: Ctx, appUid: string): Promise<CollectionRow[]> {
  const rows = await ctx.db.selectFrom('collections').selectAll().where('app_uid', '=', appUid).orderBy('created_at', 'desc').orderBy('uid', 'desc').execute();
  return rows.map((c) => {
    const v = collectionView(c, ctx.installation);
    return {
      uid: v.uid,
      name: v.name,
      symbol: v.symbol,
      description: v.description,
      editable_assets: v.editable_assets,
      status: v.status as CollectionRow['status'],
      contract_address: v.contract_address,
      explorer_url: v.explorer_url,
      created_at: v.created_at,
      soulbound: v.soulbound,
      royalty_receiver: v.royalty_receiver,
      royalty_bps: v.royalty_bps,
      image_url: c.image_url,
      external_url: v.external_url,
      contract_uri: v.contract_uri,
      type: c.standard,
    };
  });
}

async function requireReward(ctx: Ctx, appUid: string, rewardUid: string): Promise<void> {
  const r = await ctx.db.selectFrom('rewards').select('uid').where('uid', '=', rewardUid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!r) throw ApiError.notFound('Reward');
}

export async function listRewardAllocations(ctx: Ctx, appUid: string, rewardUid: string, q: { cursor?: string; limit: number }) {
  await requireReward(ctx, appUid, rewardUid);
  const rows = await keysetPageBy(ctx.db.selectFrom('allocations').selectAll().where('reward_uid', '=', rewardUid), NEWEST('allocations'), q).execute();
  return consolePage(pageOf(rows, q, allocationView));
}

export async function listRewardClaims(ctx: Ctx, appUid: string, rewardUid: string, q: { cursor?: string; limit: number }) {
  await requireReward(ctx, appUid, rewardUid);
  const rows = await keysetPageBy(ctx.db.selectFrom('claims').selectAll().where('reward_uid', '=', rewardUid), NEWEST('claims'), q).execute();
  return consolePage(pageOf(rows, q, claimView));
}

// ------------------------------------------------------------------------------------------ webhook

/** The delivery log: one row per event sent (or to send) to the App's webhook, newest first. */
export async function deliveryLog(
  ctx: Ctx,
  appUid: string,
  q: { cursor?: string; limit: number; status?: DeliveryRow['status']; eventId?: string },
): Promise<Page<DeliveryRow>> {
  let qb = deliveriesOf(ctx, appUid);
  if (q.status) qb = qb.where('d.status', '=', q.status);
  if (q.eventId) qb = qb.where('d.event_id', '=', q.eventId);
  const rows = await keysetPageBy(qb, { columns: ['d.event_time_ms', 'd.event_id'], kinds: ['n', 's'], hint: HINT }, q).execute();
  const shown = rows.slice(0, q.limit);
  const last = new Map<string, string | null>();
  if (shown.length) {
    const attempts = await ctx.db
      .selectFrom('webhook_attempts')
      .select(['event_id', 'response_body'])
      .where(
        'event_id',
        'in',
        shown.map((r) => r.event_id),
      )
      .orderBy('id', 'desc')
      .execute();
    for (const a of attempts) if (!last.has(a.event_id)) last.set(a.event_id, a.response_body);
  }
  // The delivery as the management API shows it (one view), with the last answer's start and without
  // the times the log does not show.
  const row = (r: (typeof rows)[number]): DeliveryRow => {
    const { delivered_at: _delivered, expires_at: _expires, ...shown } = deliveryView(r);
    return { ...shown, last_response: last.get(r.event_id) ?? null };
  };
  return consolePage(pageOf(rows, q, row, (r) => [Number(r.event_time_ms), r.event_id]));
}
