// The verifier's walk over assets: each asset of a deployed collection with its latest transfer and burn,
// beside what the chain shows of its token (divergences.ts assetDivergences judges them).
import type { Address } from 'viem';
import type { Ctx } from '../context.js';
import { FORWARD_TX, type ForwardItem } from '../../chain/outcomes.js';
import { FORWARD_JOB, kindOn } from '../../jobs/kinds.js';
import { jobsUnderWay } from '../../jobs/claimable.js';
import { assetDivergences, type ActionRecord, type AssetCase, type Found } from './divergences.js';
import { mapLimit, readToken, type ChainClient } from './chain-reader.js';
import type { Tally } from './tally.js';

/** Chain reads at once per verification: enough to hide latency, few enough for a provider's rate limit. */
export const READ_CONCURRENCY = 8;
/** Rows read per query. */
export const PAGE = 500;

export interface CollectionRef {
  uid: string;
  contract_address: string;
}

/** Transfers and burns a job or an unfinal relayed transaction still carries (their outcome is not known yet). */
export async function actionsInFlight(ctx: Ctx, chainId: number, pending: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  if (pending.length === 0) return out;
  const txs = await ctx.db
    .selectFrom('chain_txs')
    .select('payload')
    .where('chain_id', '=', chainId)
    .where('kind', '=', FORWARD_TX)
    .where('handled', '=', 0)
    .execute();
  for (const t of txs) for (const it of (JSON.parse(t.payload) as { items: ForwardItem[] }).items) out.add(it.uid);
  for (let i = 0; i < pending.length; i += PAGE) {
    const jobs = await jobsUnderWay(ctx.db, kindOn(ctx, FORWARD_JOB, chainId))
      .select('ref')
      .where('ref', 'in', pending.slice(i, i + PAGE))
      .execute();
    for (const j of jobs) out.add(j.ref);
  }
  return out;
}

type AssetRow = {
  uid: string;
  app_uid: string;
  collection_uid: string;
  token_id: number;
  mint_status: 'pending' | 'minted' | 'failed';
  is_burned: number;
  is_editing: number;
  owner_address: string | null;
  token_uri: string | null;
};

/** The latest row per asset (by creation, then uid). */
function latestBy<T extends { asset_uid: string; created_at: string; uid: string }>(rows: T[]): Map<string, T> {
  const out = new Map<string, T>();
  for (const r of rows) {
    const seen = out.get(r.asset_uid);
    if (!seen || r.created_at > seen.created_at || (r.created_at === seen.created_at && r.uid > seen.uid)) out.set(r.asset_uid, r);
  }
  return out;
}

/**
 * Checks the given assets (rows of one chain's collections) against the chain: their cases are built
 * from the database in bulk, their tokens read a few at a time. Gives the divergences of each asset
 * judged: not those in flight, nor those whose token could not be read (counted as unverified).
 * Long: the cases are built in bulk and judged in one pass that shares them.
 */
export async function checkAssets(
  ctx: Ctx,
  client: ChainClient,
  chainId: number,
  collections: ReadonlyMap<string, CollectionRef>,
  operator: Address,
  assets: readonly AssetRow[],
  t: Tally,
): Promise<Map<string, Found[]>> {
  if (assets.length === 0) return new Map();
  const uids = assets.map((a) => a.uid);
  const [transfers, burns] = await Promise.all([
    ctx.db.selectFrom('transfers').select(['uid', 'asset_uid', 'from_user_uid', 'to_address', 'status', 'created_at']).where('asset_uid', 'in', uids).execute(),
    ctx.db.selectFrom('burns').select(['uid', 'asset_uid', 'status', 'created_at']).where('asset_uid', 'in', uids).execute(),
  ]);
  const lastTransfer = latestBy(transfers);
  const lastBurn = latestBy(burns);
  const pending = [...lastTransfer.values(), ...lastBurn.values()].filter((r) => r.status === 'pending').map((r) => r.uid);
  const flying = await actionsInFlight(ctx, chainId, pending);
  const senders = [...new Set([...lastTransfer.values()].map((r) => r.from_user_uid))];
  const wallets = senders.length
    ? new Map(
        (await ctx.db.selectFrom('wallets').select(['user_uid', 'address']).where('chain_id', '=', chainId).where('user_uid', 'in', senders).execute()).map(
          (w) => [w.user_uid, w.address.toLowerCase()],
        ),
      )
    : new Map<string, string>();
  const action = (r: { uid: string; status: ActionRecord['status'] } | undefined): ActionRecord | null =>
    r ? { uid: r.uid, status: r.status, inFlight: flying.has(r.uid) } : null;
  const verdicts = await mapLimit(assets, READ_CONCURRENCY, async (a) => {
    const tr = lastTransfer.get(a.uid);
    const c: AssetCase = {
      asset: {
        uid: a.uid,
        app_uid: a.app_uid,
        mint_status: a.mint_status,
        is_burned: a.is_burned === 1,
        is_editing: a.is_editing === 1,
        owner_address: a.owner_address,
        token_uri: a.token_uri,
      },
      transfer: tr ? { ...action(tr)!, to_address: tr.to_address, from_wallet: wallets.get(tr.from_user_uid) ?? null } : null,
      burn: action(lastBurn.get(a.uid)),
      token: null,
    };
    // Nothing to read for what is in flight or never reached the chain.
    const first = assetDivergences(c);
    if (first.inFlight || a.mint_status === 'pending') return first;
    const contract = collections.get(a.collection_uid)!.contract_address as Address;
    c.token = await readToken(client, contract, Number(a.token_id), operator);
    return c.token === null ? 'unread' : assetDivergences(c);
  });
  const judged = new Map<string, Found[]>();
  verdicts.forEach((v, i) => {
    if (v === 'unread') t.unverified('assets');
    else if (v.inFlight) t.inFlight('assets');
    else {
      t.checked('assets');
      judged.set(assets[i].uid, v.found);
    }
  });
  t.add('transfers', lastTransfer.size);
  t.add('burns', lastBurn.size);
  return judged;
}

/** Every asset of the given collections (of one App when `appUid`), a page at a time. */
export async function checkAllAssets(
  ctx: Ctx,
  client: ChainClient,
  chainId: number,
  collections: ReadonlyMap<string, CollectionRef>,
  operator: Address,
  t: Tally,
): Promise<Found[]> {
  const found: Found[] = [];
  for (const c of collections.values()) {
    // By token id: the (collection, token id) index gives each page as a range.
    let after = -1;
    for (;;) {
      const rows = await assetRows(ctx).where('collection_uid', '=', c.uid).where('token_id', '>', after).orderBy('token_id').limit(PAGE).execute();
      for (const f of (await checkAssets(ctx, client, chainId, collections, operator, rows, t)).values()) found.push(...f);
      if (rows.length < PAGE) break;
      after = Number(rows[rows.length - 1].token_id);
    }
  }
  return found;
}

/** The columns of an asset the rules read. */
export const assetRows = (ctx: Ctx) =>
  ctx.db.selectFrom('assets').select(['uid', 'app_uid', 'collection_uid', 'token_id', 'mint_status', 'is_burned', 'is_editing', 'owner_address', 'token_uri']);

export type { AssetRow };
