// The console's assets page: an App's assets by collection, status or search, and one asset with its
// metadata, chain transactions and history.
import { getAddress } from 'viem';
import { sql, type Selectable } from 'kysely';
import type { Ctx } from '../context.js';
import type { AssetTable } from '../../store/schema.js';
import { ApiError } from '../../util/errors.js';
import { chainOf } from '../views.js';
import { keysetPageBy, pageOf } from '../requests/pages.js';
import { isoOfMs } from '../../webhooks/message.js';
import type { AssetDetail, AssetRow, AssetStatus, HistoryItem, Page, TxRow } from './types.js';

import { HINT, NEWEST, consolePage } from './pages.js';
import { inFlightMintOf } from '../assets/in-flight-mints.js';

export const ASSET_STATUSES = ['not_minted', 'minted', 'transferring', 'burning', 'burned', 'failed'] as const satisfies readonly AssetStatus[];

const checksum = (a: string) => getAddress(a);

export function assetRows(ctx: Ctx) {
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

type AssetListRow = Pick<
  Selectable<AssetTable>,
  | 'uid'
  | 'name'
  | 'asset_external_id'
  | 'collection_uid'
  | 'token_id'
  | 'mint_status'
  | 'mint_error'
  | 'is_burned'
  | 'is_burning'
  | 'is_transferring'
  | 'owner_user_uid'
  | 'owner_address'
  | 'metadata'
  | 'created_at'
> & { collection_name: string };

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

export function assetRow(a: AssetListRow): AssetRow {
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
    // Statuses other than minted, as literals: each has a partial index of its own (migrations 018 and
    // 021), which a planner uses only when the query names the indexed value itself.
    case 'not_minted':
      qb = qb.where('assets.mint_status', '=', sql.lit('pending'));
      break;
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
      qb = qb
        .where('assets.mint_status', '=', 'minted')
        .where('assets.is_burned', '=', 0)
        .where('assets.is_burning', '=', 0)
        .where('assets.is_transferring', '=', 0);
      break;
  }
  const search = q.search?.trim();
  if (search) {
    // Two lookups by a unique key each: as one OR beside the App, SQLite walked every asset of the App.
    const [byUid, byExternalId] = await Promise.all([
      qb.where('assets.uid', '=', search).execute(),
      qb.where('assets.asset_external_id', '=', search).execute(),
    ]);
    const rows = [...byUid, ...byExternalId.filter((a) => a.uid !== byUid[0]?.uid)].slice(0, q.limit);
    return { items: rows.map(assetRow), next_cursor: null };
  }
  if (q.collection) {
    qb = qb.where('assets.collection_uid', '=', q.collection);
    const rows = await keysetPageBy(qb, { columns: ['assets.token_id'], kinds: ['n'], hint: HINT }, q).execute();
    return consolePage(pageOf(rows, q, assetRow, (a) => [Number(a.token_id)]));
  }
  const rows = await keysetPageBy(qb, NEWEST('assets'), q).execute();
  return consolePage(pageOf(rows, q, assetRow));
}

const TX_LABEL: Record<string, string> = { 'asset.mint': 'mint', 'asset.edit': 'edit', forward: 'transfer or burn' };

function assetOfApp(ctx: Ctx, appUid: string, assetUid: string) {
  return (
    ctx.db
      .selectFrom('assets')
      .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
      // The mint transaction under way, if any (the asset's own `mint_tx_id` is set once its outcome is).
      .leftJoin('in_flight_mints', inFlightMintOf)
      .selectAll('assets')
      .select([
        'collections.name as collection_name',
        'collections.contract_address',
        'collections.status as collection_status',
        'collections.chain_id',
        'in_flight_mints.tx_id as in_flight_tx_id',
      ])
      .where('assets.uid', '=', assetUid)
      .where('assets.app_uid', '=', appUid)
      .executeTakeFirst()
  );
}

type AssetOfApp = NonNullable<Awaited<ReturnType<typeof assetOfApp>>>;
type ChainTxRow = NonNullable<Awaited<ReturnType<typeof chainTxById>>>;
interface AssetActions {
  transfers: Awaited<ReturnType<typeof transfersOf>>;
  burns: Awaited<ReturnType<typeof burnsOf>>;
  editTxs: ChainTxRow[];
  mintTx: ChainTxRow | undefined;
}

function transfersOf(ctx: Ctx, assetUid: string) {
  return ctx.db.selectFrom('transfers').selectAll().where('asset_uid', '=', assetUid).orderBy('created_at').execute();
}
function burnsOf(ctx: Ctx, assetUid: string) {
  return ctx.db.selectFrom('burns').selectAll().where('asset_uid', '=', assetUid).orderBy('created_at').execute();
}
function chainTxById(ctx: Ctx, id: number) {
  return ctx.db.selectFrom('chain_txs').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The asset's transactions on chain, oldest first: its mint, its edits and the relayed batches that carry its transfers and burns. */
async function assetTransactions(ctx: Ctx, explorer: string, { transfers, burns, editTxs, mintTx }: AssetActions): Promise<TxRow[]> {
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
  return txs.map((t) => ({
    kind: kindOf(t),
    hash: t.hash,
    status: t.status,
    block_number: t.block_number === null ? null : Number(t.block_number),
    from: checksum(t.from_address),
    explorer_url: `${explorer}/tx/${t.hash}`,
    error: t.error,
    time: isoOfMs(t.created_at),
  }));
}

/** What happened to the asset, oldest first, in words. */
function assetHistory(a: AssetOfApp, { transfers, burns, editTxs, mintTx }: AssetActions): HistoryItem[] {
  const history: HistoryItem[] = [{ time: a.created_at, event: 'created', detail: `token id ${a.token_id} for user ${a.mint_for_user_uid}` }];
  if (mintTx) history.push({ time: isoOfMs(mintTx.created_at), event: 'mint sent', detail: mintTx.hash });
  if (a.mint_status === 'minted')
    history.push({
      time: mintTx ? isoOfMs(mintTx.updated_at) : a.updated_at,
      event: 'minted',
      detail: a.mint_for_address ? `to ${checksum(a.mint_for_address)}` : null,
    });
  if (a.mint_status === 'failed') history.push({ time: a.updated_at, event: 'mint failed', detail: a.mint_error });
  for (const t of transfers) {
    history.push({ time: t.created_at, event: 'transfer requested', detail: `by ${t.from_user_uid} to ${checksum(t.to_address)}` });
    if (t.status !== 'pending')
      history.push({
        time: t.updated_at,
        event: t.status === 'done' ? 'transferred' : 'transfer cancelled',
        detail: t.status === 'done' ? `to ${checksum(t.to_address)}` : t.reason,
      });
  }
  for (const b of burns) {
    history.push({ time: b.created_at, event: 'burn requested', detail: `by ${b.from_user_uid}` });
    if (b.status !== 'pending') history.push({ time: b.updated_at, event: b.status === 'done' ? 'burned' : 'burn cancelled', detail: b.reason });
  }
  for (const e of editTxs)
    history.push({ time: isoOfMs(e.created_at), event: 'edited', detail: e.status === 'mined' ? 'metadata updated on chain' : `metadata update ${e.status}` });
  history.sort((x, y) => (x.time < y.time ? -1 : x.time > y.time ? 1 : 0));
  return history;
}

export async function assetDetail(ctx: Ctx, appUid: string, assetUid: string): Promise<AssetDetail> {
  const first = await assetOfApp(ctx, appUid, assetUid);
  if (!first) throw ApiError.notFound('Asset');
  const explorer = chainOf(ctx.installation, first.chain_id).explorer;
  const [transfers, burns, editTxs] = await Promise.all([
    transfersOf(ctx, first.uid),
    burnsOf(ctx, first.uid),
    ctx.db.selectFrom('chain_txs').selectAll().where('kind', '=', 'asset.edit').where('ref', '=', first.uid).execute(),
  ]);
  // The asset again, after its transfers and burns: a transfer that finished between the two reads
  // (its commit changes both) would show as done beside the old owner. (Gone meanwhile: the first read.)
  const a = (await assetOfApp(ctx, appUid, assetUid)) ?? first;
  // The mint's transaction after the asset: the outcome that marks the asset minted marks its transaction
  // mined in the same commit, so read after, it is never behind the asset (read before, a mint applied
  // in between showed a minted asset beside a transaction still "sent").
  const mintTxId = a.mint_tx_id ?? a.in_flight_tx_id;
  const mintTx = mintTxId === null ? undefined : await chainTxById(ctx, mintTxId);
  const transactions = await assetTransactions(ctx, explorer, { transfers, burns, editTxs, mintTx });
  const history = assetHistory(a, { transfers, burns, editTxs, mintTx });

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
