// Edit, transfer and burn (docs/api.md, Assets, Transfers and burns). Preconditions are checked and claimed in ONE conditional
// UPDATE, so two concurrent requests for one asset can never both be accepted. Transfers and burns are
// signed by the owning user's own key as ERC-2771 forward requests and relayed (users hold no gas);
// edits are operator calls that emit ERC-4906 MetadataUpdate.
import { encodeFunctionData, getAddress, type Address, type Hex, type TransactionReceipt } from 'viem';
import { keysetPage, pageOf, type PageRequest } from './pages.js';
import type { Selectable } from 'kysely';
import type { Ctx } from './context.js';
import type { DbOrTx, Tx } from '../store/db.js';
import { isUniqueViolation } from '../store/db.js';
import type { BurnTable, TransferTable } from '../store/schema.js';
import type { Job } from '../jobs/queue.js';
import type { JobHandler } from '../jobs/worker.js';
import { artifact } from '../chain/artifacts.js';
import { claimOutcome, type ChainTxRow, type TxOutcome } from '../chain/sender.js';
import { setTokenCidCalldata } from '../chain/token-uri.js';
import { allocateForwarderNonce, encodeForwardBatch, forwardBatchGas, forwardResults, resyncForwarderNonce, signForwardRequest, type ForwardRequestData } from '../chain/forward.js';
import { ApiError } from '../util/errors.js';
import { newUid } from '../util/ids.js';
import { nowIso } from '../util/time.js';
import { buildMetadata, displayName, type AssetData } from '../domain/assets.js';
import { assetPrecondition, type Action } from '../domain/lifecycle.js';
import { parseAddressField } from './fields.js';
import { emitEvent } from './events.js';
import { getAsset } from './assets.js';
import { assertImageUrlFetchable, needsPreparation, prepareAssetMetadata } from '../metadata/prepare.js';
import { MetadataError } from '../metadata/fetch-image.js';
import { saveAnswer, type IdempotentWrite } from './idempotency.js';
import { queueOn } from '../jobs/kinds.js';

/** The chain of an asset: its collection's. */
async function chainOfAsset(db: DbOrTx, assetUid: string): Promise<number> {
  const c = await db.selectFrom('assets').innerJoin('collections', 'collections.uid', 'assets.collection_uid').select('collections.chain_id').where('assets.uid', '=', assetUid).executeTakeFirstOrThrow();
  return Number(c.chain_id);
}

export const FORWARD_JOB = 'asset.forward';
export const EDIT_JOB = 'asset.edit';
const FORWARD_TX = 'forward';
const EDIT_TX = 'asset.edit';
const MAX_ROUNDS = 3;

type TransferRow = Selectable<TransferTable>;
type BurnRow = Selectable<BurnTable>;

export function transferView(t: TransferRow) {
  const v = { uid: t.uid, asset_uid: t.asset_uid, from_user_uid: t.from_user_uid, to_address: t.to_address.toLowerCase(), created_at: t.created_at, status: t.status };
  // A cancelled transfer says why (an extra trailing key; the documented keys keep their order).
  return t.status === 'cancelled' ? { ...v, reason: t.reason } : v;
}

export function burnView(b: BurnRow) {
  return { uid: b.uid, asset_uid: b.asset_uid, from_user_uid: b.from_user_uid, created_at: b.created_at, status: b.status === 'cancelled' ? 'pending' : b.status };
}


// ------------------------------------------------------------------------------------ transfer, burn

export async function createTransfer(ctx: Ctx, appUid: string, p: { asset_uid: string; from_user_uid: string; to_address: string }, idem?: IdempotentWrite) {
  const to = parseAddressField('to_address', p.to_address);
  return startAction(ctx, appUid, 'transfer', p.asset_uid, p.from_user_uid, to, idem);
}

export async function createBurn(ctx: Ctx, appUid: string, p: { asset_uid: string; from_user_uid: string }, idem?: IdempotentWrite) {
  return startAction(ctx, appUid, 'burn', p.asset_uid, p.from_user_uid, null, idem);
}

async function startAction(ctx: Ctx, appUid: string, action: Action, assetUid: string, fromUserUid: string, to: string | null, idem: IdempotentWrite | undefined): Promise<{ uid: string }> {
  const uid = newUid();
  let chainId = 0;
  await ctx.db.transaction().execute(async (tx) => {
    const user = await tx.selectFrom('users').select('uid').where('uid', '=', fromUserUid).where('app_uid', '=', appUid).executeTakeFirst();
    if (!user) throw ApiError.client(404, 'not_found', 'User not found.');
    const flag = action === 'transfer' ? 'is_transferring' : 'is_burning';
    // The claim: only one request can flip the flag from 0 to 1 while every precondition holds.
    const claimed = await tx
      .updateTable('assets')
      .set({ [flag]: 1, updated_at: nowIso() })
      .where('uid', '=', assetUid)
      .where('app_uid', '=', appUid)
      .where('mint_status', '=', 'minted')
      .where('is_burned', '=', 0)
      .where('is_transferring', '=', 0)
      .where('is_burning', '=', 0)
      .where('owner_user_uid', '=', fromUserUid)
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) === 0) {
      const a = await tx.selectFrom('assets').selectAll().where('uid', '=', assetUid).where('app_uid', '=', appUid).executeTakeFirst();
      if (!a) throw ApiError.notFound('Asset');
      const failed = assetPrecondition(a, fromUserUid);
      throw ApiError.client(400, failed?.code ?? 'precondition_failed', failed?.message ?? 'The asset cannot be changed right now.');
    }
    const t = nowIso();
    if (action === 'transfer') {
      await tx.insertInto('transfers').values({ uid, app_uid: appUid, asset_uid: assetUid, from_user_uid: fromUserUid, to_address: to!, status: 'pending', reason: null, attempts: 0, created_at: t, updated_at: t }).execute();
    } else {
      await tx.insertInto('burns').values({ uid, app_uid: appUid, asset_uid: assetUid, from_user_uid: fromUserUid, status: 'pending', reason: null, attempts: 0, created_at: t, updated_at: t }).execute();
    }
    chainId = await chainOfAsset(tx, assetUid);
    await queueOn(ctx, chainId).enqueue(tx, { kind: FORWARD_JOB, ref: uid, payload: { action } });
    await saveAnswer(tx, idem, { uid });
  });
  queueOn(ctx, chainId).notify(FORWARD_JOB);
  return { uid };
}

export async function getTransfer(ctx: Ctx, appUid: string, uid: string) {
  const t = await ctx.db.selectFrom('transfers').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!t) throw ApiError.notFound('Transfer');
  return transferView(t);
}

export async function listTransfers(ctx: Ctx, appUid: string, userUid: string, page: PageRequest = {}) {
  const rows = await keysetPage(ctx.db.selectFrom('transfers').selectAll().where('app_uid', '=', appUid).where('from_user_uid', '=', userUid), 'transfers', page).execute();
  return pageOf(rows, page, transferView);
}

export async function getBurn(ctx: Ctx, appUid: string, uid: string) {
  const b = await ctx.db.selectFrom('burns').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!b) throw ApiError.notFound('Burn');
  return burnView(b);
}

export async function listBurns(ctx: Ctx, appUid: string, userUid: string, page: PageRequest = {}) {
  const rows = await keysetPage(ctx.db.selectFrom('burns').selectAll().where('app_uid', '=', appUid).where('from_user_uid', '=', userUid), 'burns', page).execute();
  return pageOf(rows, page, burnView);
}

interface ForwardItem { action: Action; uid: string; asset_uid: string; signer: string; nonce: string; round: number }

/** Signs each pending transfer/burn with its owner's key and relays them, one batch per relayer. */
export function forwardJobHandler(ctx: Ctx): JobHandler {
  const sender = ctx.sender!;
  const collectionAbi = artifact('MintworksCollection').abi;
  const forwarderAbi = artifact('MintworksForwarder').abi;
  const forwarder = ctx.forwarder!;
  return {
    kind: FORWARD_JOB,
    batchSize: 50,
    leaseMs: 15_000,
    pollMs: 500,
    async handle(jobs) {
      const groups = new Map<string, { jobs: Job[]; prepared: { job: Job; item: Omit<ForwardItem, 'signer' | 'nonce'>; userUid: string; to: Address; data: Hex }[] }>();
      for (const job of jobs) {
        const { action, round = 1 } = job.payload as { action: Action; round?: number };
        const row = action === 'transfer'
          ? await ctx.db.selectFrom('transfers').selectAll().where('uid', '=', job.ref).executeTakeFirst()
          : await ctx.db.selectFrom('burns').selectAll().where('uid', '=', job.ref).executeTakeFirst();
        if (!row || row.status !== 'pending') {
          await ctx.queue.complete(ctx.db, job.id);
          continue;
        }
        const a = await ctx.db
          .selectFrom('assets')
          .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
          .select(['assets.token_id', 'collections.contract_address'])
          .where('assets.uid', '=', row.asset_uid)
          .executeTakeFirstOrThrow();
        const user = ctx.keys.user(row.from_user_uid);
        const data =
          action === 'transfer'
            ? encodeFunctionData({ abi: collectionAbi, functionName: 'transferFrom', args: [user.address, getAddress((row as TransferRow).to_address), BigInt(a.token_id)] })
            : encodeFunctionData({ abi: collectionAbi, functionName: 'burn', args: [BigInt(a.token_id)] });
        const relayer = sender.relayerFor(user.address.toLowerCase()).address;
        const g = groups.get(relayer) ?? { jobs: [], prepared: [] };
        g.jobs.push(job);
        g.prepared.push({ job, item: { action, uid: row.uid, asset_uid: row.asset_uid, round }, userUid: row.from_user_uid, to: getAddress(a.contract_address!), data });
        groups.set(relayer, g);
      }
      for (const [relayerAddress, g] of groups) {
        const relayer = sender.relayers.find((r) => r.address === relayerAddress)!;
        const row = await ctx.db.transaction().execute(async (tx) => {
          const requests: ForwardRequestData[] = [];
          const items: ForwardItem[] = [];
          for (const p of g.prepared) {
            const user = ctx.keys.user(p.userUid);
            const nonce = await allocateForwarderNonce(tx, sender.chainId, user.address, () =>
              sender.client.readContract({ address: forwarder, abi: forwarderAbi, functionName: 'nonces', args: [user.address] }) as Promise<bigint>,
            );
            const deadline = Math.floor(Date.now() / 1000) + 24 * 3600;
            requests.push(await signForwardRequest(user, forwarder, ctx.config.chainId, { to: p.to, data: p.data, gas: 150_000n, nonce, deadline }));
            items.push({ ...p.item, signer: user.address.toLowerCase(), nonce: nonce.toString() });
          }
          const r = await sender.record(tx, { kind: FORWARD_TX, ref: items[0].uid, payload: { items }, to: forwarder, data: encodeForwardBatch(requests, relayer.address), gas: forwardBatchGas(requests), signer: relayer });
          for (const j of g.jobs) await ctx.queue.complete(tx, j.id);
          return r;
        });
        await sender.broadcast([row]);
      }
    },
  };
}

/** Applies a relayed batch: per request, executed (done), executed but failed (cancelled), or not executed (retried). */
export function forwardOutcome(ctx: Ctx) {
  const client = ctx.sender!.client;
  const forwarder = ctx.forwarder!;
  const forwarderAbi = artifact('MintworksForwarder').abi;
  return async (row: ChainTxRow, outcome: TxOutcome): Promise<void> => {
    const { items } = JSON.parse(row.payload) as { items: ForwardItem[] };
    let receipt: TransactionReceipt | null = outcome.receipt;
    if (!receipt && outcome.ok) receipt = await client.getTransactionReceipt({ hash: row.hash as Hex }).catch(() => null);
    const results = receipt ? forwardResults(receipt, forwarder) : new Map<string, boolean>();
    const chainNonces = new Map<string, bigint>();
    for (const it of items) {
      if (!results.has(`${it.signer}:${it.nonce}`) && !chainNonces.has(it.signer)) {
        chainNonces.set(it.signer, (await client.readContract({ address: forwarder, abi: forwarderAbi, functionName: 'nonces', args: [it.signer as Address] })) as bigint);
      }
    }
    let retried = false;
    await ctx.db.transaction().execute(async (tx) => {
      if (!(await claimOutcome(tx, row.id))) return;
      for (const it of items) {
        const r = results.get(`${it.signer}:${it.nonce}`);
        if (r === true) await finishAction(ctx, tx, it);
        else if (r === false) await cancelAction(ctx, tx, it, `the ${it.action} reverted on chain (the token is no longer in the user's wallet, or the contract refused it)`);
        else if (it.round >= MAX_ROUNDS) await cancelAction(ctx, tx, it, `the ${it.action} could not be executed on chain after ${MAX_ROUNDS} attempts: ${outcome.reason ?? 'request skipped'}`);
        else {
          // Not executed (nonce mismatch after a rewind, or the whole transaction failed): re-sign from the chain's nonce.
          await resyncForwarderNonce(tx, ctx.sender!.chainId, it.signer as Address, chainNonces.get(it.signer)!);
          await ctx.queue.enqueue(tx, { kind: FORWARD_JOB, ref: it.uid, payload: { action: it.action, round: it.round + 1 } });
          retried = true;
        }
      }
    });
    if (retried) ctx.queue.notify(FORWARD_JOB);
  };
}

async function finishAction(ctx: Ctx, tx: Tx, it: ForwardItem): Promise<void> {
  const t = nowIso();
  if (it.action === 'transfer') {
    const tr = await tx.updateTable('transfers').set({ status: 'done', updated_at: t }).where('uid', '=', it.uid).where('status', '=', 'pending').returningAll().executeTakeFirst();
    if (!tr) return;
    // A wallet of another user of the same App makes that user the owner (still transferable).
    const toUser = await tx.selectFrom('users').select('uid').where('app_uid', '=', tr.app_uid).where('wallet_address', '=', tr.to_address).executeTakeFirst();
    await tx.updateTable('assets').set({ is_transferring: 0, owner_address: tr.to_address, owner_user_uid: toUser?.uid ?? null, updated_at: t }).where('uid', '=', tr.asset_uid).execute();
    await emitEvent(tx, tr.app_uid, 'asset.transferred', { asset: await getAsset(ctx, tr.app_uid, tr.asset_uid, tx), transfer: transferView(tr) });
  } else {
    const b = await tx.updateTable('burns').set({ status: 'done', updated_at: t }).where('uid', '=', it.uid).where('status', '=', 'pending').returningAll().executeTakeFirst();
    if (!b) return;
    await tx.updateTable('assets').set({ is_burning: 0, is_burned: 1, updated_at: t }).where('uid', '=', b.asset_uid).execute();
    await emitEvent(tx, b.app_uid, 'asset.burned', { asset: await getAsset(ctx, b.app_uid, b.asset_uid, tx), burn: burnView(b) });
  }
}

async function cancelAction(ctx: Ctx, tx: Tx, it: ForwardItem, reason: string): Promise<void> {
  const t = nowIso();
  const table = it.action === 'transfer' ? 'transfers' : 'burns';
  const r = await tx.updateTable(table).set({ status: 'cancelled', reason, updated_at: t }).where('uid', '=', it.uid).where('status', '=', 'pending').executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) return;
  await tx.updateTable('assets').set({ [it.action === 'transfer' ? 'is_transferring' : 'is_burning']: 0, updated_at: t }).where('uid', '=', it.asset_uid).execute();
  ctx.log.warn({ [it.action]: it.uid, asset: it.asset_uid, reason }, `${it.action} cancelled`);
}

// ------------------------------------------------------------------------------------------ edit

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
      if (a.editable !== 1) throw ApiError.client(400, 'not_editable', 'Assets of this collection cannot be edited: it was created without editable assets.');
      if (a.mint_status !== 'minted') throw ApiError.client(400, 'asset_not_minted', 'Asset is not minted yet.');
      if (a.is_burned || a.is_burning) throw ApiError.client(400, 'asset_burned', 'Asset is burned.');
      if (a.is_editing) throw ApiError.client(400, 'asset_editing', 'Asset is already being edited; send the edit again once is_editing is false.');
      const name = displayName(data.name, data.unique_name, a.token_id);
      if (data.unique_name) {
        const same = await tx
          .selectFrom('assets')
          .select('uid')
          .where('collection_uid', '=', a.collection_uid)
          .where('uid', '!=', uid)
          .where((eb) => eb.or([eb('name', '=', name), eb('unique_name_key', '=', name)]))
          .executeTakeFirst();
        if (same) throw ApiError.client(400, 'asset_name_exists', 'Asset with this name already exists');
      }
      const edit: PendingEdit = {
        name,
        unique_name_key: data.unique_name ? name : null,
        previous_key: a.unique_name_key,
        data,
        metadata: buildMetadata(uid, name, data),
        token_uri: null,
        needs_prepare: needsPreparation(info.environment, info.store_image === 1),
        round: 1,
      };
      // The new unique name is reserved now (the unique index decides races); the rest applies when done.
      await tx.updateTable('assets').set({ is_editing: 1, pending_edit: JSON.stringify(edit), unique_name_key: edit.unique_name_key, updated_at: nowIso() }).where('uid', '=', uid).execute();
      await queueOn(ctx, chainId).enqueue(tx, { kind: EDIT_JOB, ref: uid });
      await saveAnswer(tx, idem, null);
    });
  } catch (err) {
    if (isUniqueViolation(err, 'unique_name_key')) throw ApiError.client(400, 'asset_name_exists', 'Asset with this name already exists');
    throw err;
  }
  queueOn(ctx, chainId).notify(EDIT_JOB);
  return null;
}

export function editJobHandler(ctx: Ctx): JobHandler {
  const sender = ctx.sender!;
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
            const prepared = await prepareAssetMetadata(ctx, { appEnvironment: a.environment, assetUid: job.ref, name: edit.name, data: edit.data, storeImage: a.store_image === 1 });
            edit = { ...edit, metadata: prepared.metadata, token_uri: prepared.tokenUri, needs_prepare: false };
            await ctx.db.updateTable('assets').set({ pending_edit: JSON.stringify(edit) }).where('uid', '=', job.ref).execute();
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
          const r = await sender.record(tx, { kind: EDIT_TX, ref: job.ref, payload: { asset_uid: job.ref }, to: a.contract_address as Address, data, gas: setsCid ? 100_000n : 60_000n });
          await ctx.queue.complete(tx, job.id);
          return r;
        });
        await sender.broadcast([row]);
      }
    },
  };
}

export function editOutcome(ctx: Ctx) {
  return async (row: ChainTxRow, outcome: TxOutcome): Promise<void> => {
    const uid = row.ref;
    await ctx.db.transaction().execute(async (tx) => {
      if (!(await claimOutcome(tx, row.id))) return;
      const a = await tx.selectFrom('assets').selectAll().where('uid', '=', uid).executeTakeFirst();
      if (!a?.pending_edit) return;
      const edit = JSON.parse(a.pending_edit) as PendingEdit;
      const t = nowIso();
      if (outcome.ok) {
        await tx
          .updateTable('assets')
          .set({ name: edit.name, metadata: JSON.stringify(edit.metadata), token_uri: edit.token_uri ?? a.token_uri, is_editing: 0, pending_edit: null, updated_at: t })
          .where('uid', '=', uid)
          .execute();
        await emitEvent(tx, a.app_uid, 'asset.edited', { asset: await getAsset(ctx, a.app_uid, uid, tx) });
      } else if (edit.round < MAX_ROUNDS) {
        await tx.updateTable('assets').set({ pending_edit: JSON.stringify({ ...edit, round: edit.round + 1 }) }).where('uid', '=', uid).execute();
        await ctx.queue.enqueue(tx, { kind: EDIT_JOB, ref: uid, runAt: Date.now() + 2000 });
      } else {
        await abandonEdit(ctx, uid, edit, `failed on chain: ${outcome.reason ?? 'reverted'}`, tx);
      }
    });
  };
}

/** Gives an edit up: the asset keeps its previous metadata and name reservation. */
async function abandonEdit(ctx: Ctx, uid: string, edit: PendingEdit, reason: string, db: DbOrTx = ctx.db): Promise<void> {
  await db.updateTable('assets').set({ is_editing: 0, pending_edit: null, unique_name_key: edit.previous_key, updated_at: nowIso() }).where('uid', '=', uid).execute();
  ctx.log.error({ asset: uid, reason }, 'edit abandoned; the asset keeps its previous metadata');
}
