// Assets: created in one transaction with their token id, metadata and mint job; minted in batches
// (one chain transaction for many assets of a collection); confirmed from the receipt's Transfer logs.
import { encodeFunctionData, parseEventLogs, type Address, type Hex, type TransactionReceipt } from 'viem';
import type { Ctx } from './context.js';
import type { Job } from '../jobs/queue.js';
import type { JobHandler } from '../jobs/worker.js';
import type { DbOrTx, Tx } from '../store/db.js';
import { isUniqueViolation } from '../store/db.js';
import { artifact } from '../chain/artifacts.js';
import { claimOutcome, type ChainTxRow, type TxOutcome } from '../chain/sender.js';
import { ApiError } from '../util/errors.js';
import { newUid } from '../util/ids.js';
import { nowIso } from '../util/time.js';
import { emitEvent } from './events.js';
import { assetView } from './views.js';
import { requestWallet, WALLET_JOB } from './wallets.js';
import { buildMetadata, displayName, type AssetData } from '../domain/assets.js';
import { assertImageUrlFetchable, needsPreparation, PREPARE_ATTEMPTS, PREPARE_JOB } from '../metadata/prepare.js';

export const MINT_JOB = 'asset.mint';
const MINT_TX = 'asset.mint';
const MAX_MINT_ROUNDS = 5;

export interface AssetParams {
  user_uid: string;
  collection_uid: string;
  asset_external_id: string;
  sale_price_in_usd?: number | null;
  data: AssetData & { store_image_on_ipfs: boolean };
}

const nameTaken = () => ApiError.client(400, 'asset_name_exists', 'Asset with this name already exists');
const externalIdTaken = () => ApiError.client(400, 'asset_external_id_exists', 'Asset with this asset_external_id already exists', 'asset_external_id');

/** Columns of a new asset row with nothing in flight: not burned, no transfer, burn or edit running. */
export const NO_ACTIONS = { mint_error: null, mint_tx_id: null, is_burned: 0, is_transferring: 0, is_editing: 0, is_burning: 0, pending_edit: null } as const;

export async function createAsset(ctx: Ctx, appUid: string, p: AssetParams): Promise<{ uid: string }> {
  const uid = newUid();
  let walletQueued = false;
  // The worker fetches the image; what is refused already now (scheme, forbidden address) is a 400.
  if (p.data.store_image_on_ipfs) await assertImageUrlFetchable(ctx, p.data.image_url);
  let firstJob = MINT_JOB;
  try {
    await ctx.db.transaction().execute(async (tx) => {
      const user = await tx.selectFrom('users').select(['uid', 'wallet_address']).where('uid', '=', p.user_uid).where('app_uid', '=', appUid).executeTakeFirst();
      if (!user) throw ApiError.client(404, 'not_found', 'User not found.');
      const collection = await tx.selectFrom('collections').select(['uid', 'status']).where('uid', '=', p.collection_uid).where('app_uid', '=', appUid).executeTakeFirst();
      if (!collection) throw ApiError.notFound('Collection');
      const dup = await tx.selectFrom('assets').select('uid').where('app_uid', '=', appUid).where('asset_external_id', '=', p.asset_external_id).executeTakeFirst();
      if (dup) throw externalIdTaken();
      if (p.data.unique_name) {
        const same = await tx
          .selectFrom('assets')
          .select('uid')
          .where('collection_uid', '=', p.collection_uid)
          .where((eb) => eb.or([eb('name', '=', p.data.name), eb('unique_name_key', '=', p.data.name)]))
          .executeTakeFirst();
        if (same) throw nameTaken();
      }
      // The token id is fixed now, so a replayed mint of this asset reverts on chain instead of minting twice.
      const { next_token_id: tokenId } = await tx
        .updateTable('collections')
        .set((eb) => ({ next_token_id: eb('next_token_id', '+', 1) }))
        .where('uid', '=', p.collection_uid)
        .returning('next_token_id')
        .executeTakeFirstOrThrow()
        .then((r) => ({ next_token_id: Number(r.next_token_id) - 1 }));
      const name = displayName(p.data.name, p.data.unique_name, tokenId);
      const app = await tx.selectFrom('apps').select('environment').where('uid', '=', appUid).executeTakeFirstOrThrow();
      // Stored images and production Apps' IPFS documents are prepared by a job before the mint job.
      if (needsPreparation(app.environment, p.data.store_image_on_ipfs)) firstJob = PREPARE_JOB;
      const t = nowIso();
      await tx
        .insertInto('assets')
        .values({
          uid,
          app_uid: appUid,
          collection_uid: p.collection_uid,
          asset_external_id: p.asset_external_id,
          mint_for_user_uid: p.user_uid,
          name,
          unique_name_key: p.data.unique_name ? name : null,
          token_id: tokenId,
          mint_status: 'pending',
          ...NO_ACTIONS,
          owner_user_uid: null,
          owner_address: null,
          mint_for_address: user.wallet_address,
          token_uri: null,
          sale_price_in_usd: p.sale_price_in_usd == null ? null : String(p.sale_price_in_usd),
          metadata: JSON.stringify(buildMetadata(uid, name, p.data)),
          store_image: p.data.store_image_on_ipfs ? 1 : 0,
          created_at: t,
          updated_at: t,
        })
        .execute();
      if (!user.wallet_address) walletQueued = await requestWallet(ctx, tx, user.uid);
      await ctx.queue.enqueue(tx, firstJob === PREPARE_JOB ? { kind: PREPARE_JOB, ref: uid, groupKey: p.user_uid, maxAttempts: PREPARE_ATTEMPTS } : { kind: MINT_JOB, ref: uid, groupKey: p.user_uid, payload: { round: 1 } });
    });
  } catch (err) {
    if (isUniqueViolation(err, 'unique_name_key')) throw nameTaken();
    if (isUniqueViolation(err, 'asset_external_id')) throw externalIdTaken();
    throw err;
  }
  if (walletQueued) ctx.queue.notify(WALLET_JOB);
  ctx.queue.notify(firstJob);
  return { uid };
}

/** Asset rows with what their API view needs of the collection. */
function withCollection(db: DbOrTx) {
  return db
    .selectFrom('assets')
    .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
    .selectAll('assets')
    .select(['collections.name as collection_name', 'collections.contract_address']);
}

export async function getAsset(ctx: Ctx, appUid: string, uid: string, db: DbOrTx = ctx.db) {
  const row = await withCollection(db)
    .where('assets.uid', '=', uid)
    .where('assets.app_uid', '=', appUid)
    .executeTakeFirst();
  if (!row) throw ApiError.notFound('Asset');
  return assetView(row, { name: row.collection_name, contract_address: row.contract_address }, ctx.config);
}

/** Assets currently owned by a user (newest first); `[]` for an unknown user. */
export async function listAssetsOfUser(ctx: Ctx, appUid: string, userUid: string) {
  const rows = await withCollection(ctx.db)
    .where('assets.app_uid', '=', appUid)
    .where((eb) =>
      eb.or([
        eb('assets.owner_user_uid', '=', userUid),
        // Not yet minted: it will be the user's; the hosted service lists it too.
        eb.and([eb('assets.mint_for_user_uid', '=', userUid), eb('assets.mint_status', '!=', 'minted')]),
      ]),
    )
    .where('assets.is_burned', '=', 0)
    .orderBy('assets.created_at', 'desc')
    .limit(1000)
    .execute();
  return rows.map((r) => assetView(r, { name: r.collection_name, contract_address: r.contract_address }, ctx.config));
}

/** The metadata document behind a token's URI (development Apps keep it in the service's storage). */
export async function tokenMetadata(ctx: Ctx, collectionUid: string, tokenId: number) {
  const row = await ctx.db.selectFrom('assets').select(['metadata', 'is_burned']).where('collection_uid', '=', collectionUid).where('token_id', '=', tokenId).executeTakeFirst();
  if (!row || row.is_burned) return null;
  return JSON.parse(row.metadata) as Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------- mint

interface MintItem { asset_uid: string; token_id: number; to: string }
interface MintPayload { collection_uid: string; contract: string; items: MintItem[]; rounds: Record<string, number> }

export function mintJobHandler(ctx: Ctx): JobHandler {
  const sender = ctx.sender!;
  const { abi } = artifact('MintworksCollection');
  return {
    kind: MINT_JOB,
    batchSize: ctx.config.mintBatchSize,
    leaseMs: 10_000, // short: a crashed worker's mints are picked up again soon
    pollMs: 500,
    lingerMs: 50, // a burst of creates shares one mintBatch transaction instead of one each
    async handle(jobs) {
      const assets = await ctx.db
        .selectFrom('assets')
        .innerJoin('users', 'users.uid', 'assets.mint_for_user_uid')
        .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
        .select(['assets.uid', 'assets.token_id', 'assets.mint_status', 'assets.mint_tx_id', 'assets.collection_uid', 'assets.pending_token_uri', 'users.wallet_address', 'collections.status as collection_status', 'collections.contract_address'])
        .where('assets.uid', 'in', jobs.map((j) => j.ref))
        .execute();
      const byUid = new Map(assets.map((a) => [a.uid, a]));
      const ready = new Map<string, { contract: string; jobs: Job[]; items: MintItem[]; uris: string[] }>();
      for (const job of jobs) {
        const a = byUid.get(job.ref);
        if (!a || a.mint_status !== 'pending' || a.mint_tx_id !== null) {
          await ctx.queue.complete(ctx.db, job.id); // already in a transaction, minted or gone
        } else if (!a.wallet_address) {
          // Waits for the wallet job, which wakes this group when the wallet exists.
          await ctx.db.transaction().execute(async (tx) => {
            await requestWallet(ctx, tx, job.groupKey!);
            await ctx.queue.defer(tx, job.id, 5000);
          });
          ctx.queue.notify(WALLET_JOB);
        } else if (a.collection_status !== 'deployed' || !a.contract_address) {
          await ctx.queue.defer(ctx.db, job.id, 1000);
        } else {
          const group = ready.get(a.collection_uid) ?? { contract: a.contract_address, jobs: [], items: [], uris: [] };
          group.jobs.push(job);
          group.items.push({ asset_uid: a.uid, token_id: a.token_id, to: a.wallet_address });
          group.uris.push(a.pending_token_uri ?? ''); // '' = the collection's baseURI + id
          ready.set(a.collection_uid, group);
        }
      }
      for (const [collectionUid, g] of ready) {
        const data = encodeFunctionData({
          abi,
          functionName: 'mintBatch',
          args: [g.items.map((i) => i.to as Address), g.items.map((i) => BigInt(i.token_id)), g.uris],
        });
        const rounds = Object.fromEntries(g.jobs.map((j) => [j.ref, (j.payload as { round?: number }).round ?? 1]));
        const payload: MintPayload = { collection_uid: collectionUid, contract: g.contract, items: g.items, rounds };
        const row = await ctx.db.transaction().execute(async (tx) => {
          const r = await sender.record(tx, { kind: MINT_TX, ref: collectionUid, payload, to: g.contract as Address, data, gas: mintGas(g.items.length, g.uris) });
          for (const item of g.items) {
            await tx.updateTable('assets').set({ mint_tx_id: r.id, mint_for_address: item.to, updated_at: nowIso() }).where('uid', '=', item.asset_uid).execute();
          }
          for (const j of g.jobs) await ctx.queue.complete(tx, j.id);
          return r;
        });
        await sender.broadcast([row]);
      }
    },
  };
}

/**
 * Gas for a batch mint: measured ~50k per token plus overhead; generous so a batch never runs out. A
 * per-token URI is stored on chain: one fresh storage slot (~22k) per 32 bytes plus its length slot.
 */
export function mintGas(n: number, uris: string[] = []): bigint {
  const uriGas = uris.reduce((sum, u) => sum + (u ? 30_000 * (1 + Math.ceil(Buffer.byteLength(u) / 32)) : 0), 0);
  return BigInt(80_000 + 70_000 * n + uriGas);
}

/**
 * Applies a mint transaction. An asset counts as minted only when the chain shows it: a Transfer from
 * the zero address in this receipt, or else (reverted, dropped, rewound) `ownerOf` on the contract.
 * What the chain does not have is queued for minting again with the same token id.
 */
export function mintOutcome(ctx: Ctx) {
  const { abi } = artifact('MintworksCollection');
  const client = ctx.sender!.client;
  return async (row: ChainTxRow, outcome: TxOutcome): Promise<void> => {
    const p = JSON.parse(row.payload) as MintPayload;
    let receipt: TransactionReceipt | null = outcome.receipt;
    if (!receipt && outcome.ok) receipt = await client.getTransactionReceipt({ hash: row.hash as Hex }).catch(() => null);
    const mintedHere = new Set<number>();
    if (receipt && receipt.status === 'success') {
      for (const log of parseEventLogs({ abi, logs: receipt.logs, eventName: 'Transfer' })) {
        const args = log.args as { from: string; tokenId: bigint };
        if (log.address.toLowerCase() === p.contract.toLowerCase() && BigInt(args.from) === 0n) mintedHere.add(Number(args.tokenId));
      }
    }
    const exists = new Map<number, boolean>();
    for (const item of p.items) {
      if (mintedHere.has(item.token_id)) continue;
      const owner = await client.readContract({ address: p.contract as Address, abi, functionName: 'ownerOf', args: [BigInt(item.token_id)] }).catch(() => null);
      exists.set(item.token_id, owner !== null);
    }
    const retry: string[] = [];
    await ctx.db.transaction().execute(async (tx) => {
      if (!(await claimOutcome(tx, row.id))) return;
      for (const item of p.items) {
        if (mintedHere.has(item.token_id) || exists.get(item.token_id)) {
          await markMinted(ctx, tx, item.asset_uid, row.id);
        } else {
          const round = (p.rounds[item.asset_uid] ?? 1) + 1;
          const asset = await tx.selectFrom('assets').select(['app_uid', 'mint_for_user_uid', 'mint_status']).where('uid', '=', item.asset_uid).executeTakeFirst();
          if (!asset) continue;
          if (round > MAX_MINT_ROUNDS) {
            await tx.updateTable('assets').set({ mint_status: 'failed', mint_error: `mint failed ${MAX_MINT_ROUNDS} times: ${outcome.reason ?? 'not on chain'}`, mint_tx_id: null, updated_at: nowIso() }).where('uid', '=', item.asset_uid).execute();
            const view = await getAsset(ctx, asset.app_uid, item.asset_uid, tx);
            await emitEvent(tx, asset.app_uid, 'asset.mint_failed', { asset: view });
            continue;
          }
          await tx.updateTable('assets').set({ mint_status: 'pending', mint_tx_id: null, updated_at: nowIso() }).where('uid', '=', item.asset_uid).execute();
          await ctx.queue.enqueue(tx, { kind: MINT_JOB, ref: item.asset_uid, groupKey: asset.mint_for_user_uid, payload: { round } });
          retry.push(item.asset_uid);
        }
      }
    });
    if (retry.length) {
      ctx.log.warn({ tx: row.id, assets: retry.length, reason: outcome.reason ?? 'not on chain' }, 'mint not confirmed on chain, minting again');
      ctx.queue.notify(MINT_JOB);
    }
  };
}

async function markMinted(ctx: Ctx, tx: Tx, assetUid: string, txId: number): Promise<void> {
  const a = await withCollection(tx)
    .where('assets.uid', '=', assetUid)
    .executeTakeFirst();
  if (!a || a.mint_status === 'minted') return; // idempotent: re-applied after a rewind
  const tokenUri = a.pending_token_uri ?? `${ctx.config.publicUrl}/metadata/${a.collection_uid}/${a.token_id}`;
  const t = nowIso();
  await tx
    .updateTable('assets')
    .set({ mint_status: 'minted', mint_tx_id: txId, owner_user_uid: a.mint_for_user_uid, owner_address: a.mint_for_address, token_uri: tokenUri, updated_at: t })
    .where('uid', '=', assetUid)
    .execute();
  const view = assetView(
    { ...a, mint_status: 'minted', mint_tx_id: txId, owner_user_uid: a.mint_for_user_uid, owner_address: a.mint_for_address, token_uri: tokenUri, updated_at: t },
    { name: a.collection_name, contract_address: a.contract_address },
    ctx.config,
  );
  await emitEvent(tx, a.app_uid, 'asset.minted', { asset: view });
}
