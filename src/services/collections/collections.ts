// Collections: a contract per collection (ERC-721 MintworksCollection, or ERC-1155 MintworksItems for
// stackable items), deployed as a job through the chain sender.
import { recordAudit, type Actor } from '../audit.js';
import { encodeDeployData } from 'viem';
import type { ChainCtx, Ctx } from '../context.js';
import type { JobHandler } from '../../jobs/worker.js';
import { artifact } from '../../chain/artifacts.js';
import { COLLECTION_DEPLOY_TX, type OutcomeHandler } from '../../chain/outcomes.js';
import { contractDeployJob, contractDeployOutcome } from './contract-deploy.js';
import { ApiError } from '../../util/errors.js';
import { newUid } from '../../util/ids.js';
import { nowIso } from '../../util/time.js';
import { collectionView } from '../views.js';
import { chainForNew } from '../requests/chain-choice.js';
import { queueOn } from '../../jobs/queue.js';
import { COLLECTION_DEPLOY_JOB, ITEM_MINT_JOB, MINT_JOB } from '../../jobs/kinds.js';
import type { Tx } from '../../store/db.js';
import { lockForTransaction } from '../../store/locks.js';
import type { CollectionStandard } from '../../store/schema.js';
import { collectionInfoArgs, royaltyOrThrow, storeContractDocument } from './info.js';
import type { AppEnvironment } from '../../domain/environment.js';

export interface NewCollection {
  name: string;
  symbol: string;
  editable: boolean;
  description?: string | null;
  external_url?: string | null;
  /** The chain to deploy on; default: the default chain. */
  chain_id?: number | null;
  /** ERC721 (the default: unique assets) or ERC1155 (stackable items, the /v1/item API). */
  standard?: CollectionStandard | null;
  /** ERC-5192: tokens bound to their first holder (burns allowed); fixed at deployment. ERC-721 only. */
  soulbound?: boolean | null;
  /** ERC-2981, both or neither (domain/collection-options.ts); changeable later. ERC-721 only. */
  royalty_receiver?: string | null;
  royalty_bps?: number | null;
  /** The collection's image in its ERC-7572 contract document; changeable later. */
  image_url?: string | null;
}

/** The items contract (ERC-1155) has no royalty, soulbound tokens or contract URI: its collections take none. */
function refuseOptionsOfItems(input: NewCollection): void {
  const set = (['soulbound', 'royalty_receiver', 'royalty_bps'] as const).filter((k) => input[k] != null && input[k] !== false);
  if (set.length)
    throw ApiError.validation(set.map((field) => ({ field, code: 'invalid', message: 'ERC-1155 collections take no royalty or soulbound option.' })));
}

/** `actor`: the operator who creates it (audited in the same transaction); none for the Demo App's. */
// Long: the checks and the contract document come first, then one transaction writes the row, its deployment job and its audit entry.
export async function createCollection(ctx: Ctx, appUid: string, input: NewCollection, actor?: Actor): Promise<{ uid: string }> {
  if (!input.name.trim()) throw ApiError.validation([{ field: 'name', code: 'required', message: 'Name must not be empty.' }]);
  if (!/^[A-Za-z0-9]{1,16}$/.test(input.symbol))
    throw ApiError.validation([{ field: 'symbol', code: 'invalid', message: 'Symbol must be 1-16 letters or digits.' }]);
  const chainId = chainForNew(ctx, input.chain_id);
  const app = await ctx.db.selectFrom('apps').select(['uid', 'environment']).where('uid', '=', appUid).executeTakeFirst();
  if (!app) throw ApiError.notFound('App');
  const uid = newUid();
  const items = input.standard === 'ERC1155';
  if (items) refuseOptionsOfItems(input);
  const royalty = royaltyOrThrow(input, { royalty_receiver: null, royalty_bps: null });
  const document = {
    name: input.name,
    description: input.description ?? null,
    image_url: input.image_url ?? null,
    external_url: input.external_url ?? null,
    ...royalty,
  };
  // Stored before the row exists (content-addressed, so a failed create leaves only an unused file).
  const contractUri = items ? null : await storeContractDocument(ctx, app.environment as AppEnvironment, uid, document);
  await ctx.db.transaction().execute(async (tx) => {
    await tx
      .insertInto('collections')
      .values({
        uid,
        app_uid: appUid,
        name: input.name,
        symbol: input.symbol,
        description: input.description ?? null,
        external_url: input.external_url ?? null,
        editable: input.editable ? 1 : 0,
        status: 'deploying',
        contract_address: null,
        next_token_id: 1,
        created_at: nowIso(),
        chain_id: chainId,
        standard: input.standard ?? 'ERC721',
        ...royalty,
        soulbound: input.soulbound ? 1 : 0,
        image_url: document.image_url,
        contract_uri: contractUri,
      })
      .execute();
    await queueOn(ctx, chainId).enqueue(tx, { kind: COLLECTION_DEPLOY_JOB, ref: uid });
    if (actor)
      await recordAudit(tx, actor, {
        action: 'collection.created',
        app_uid: appUid,
        chain_id: chainId,
        details: {
          collection: uid,
          name: input.name,
          symbol: input.symbol,
          standard: input.standard ?? 'ERC721',
          soulbound: input.soulbound === true,
          ...royalty,
        },
      });
  });
  queueOn(ctx, chainId).notify(COLLECTION_DEPLOY_JOB);
  return { uid };
}

export async function getCollection(ctx: Ctx, appUid: string, uid: string) {
  const c = await ctx.db.selectFrom('collections').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!c) throw ApiError.notFound('Collection');
  return collectionView(c, ctx.installation);
}

/** An App's collections, newest first (the management API: with the image of its contract document, which the console edits). */
export async function listCollectionsOfApp(ctx: Ctx, appUid: string) {
  const rows = await ctx.db.selectFrom('collections').selectAll().where('app_uid', '=', appUid).orderBy('created_at', 'desc').execute();
  return rows.map((c) => ({ ...collectionView(c, ctx.installation), image_url: c.image_url }));
}

export function metadataBaseUri(ctx: Ctx, collectionUid: string): string {
  return `${ctx.installation.publicUrl}/metadata/${collectionUid}/`;
}

export function deployJobHandler(ctx: ChainCtx): JobHandler<typeof COLLECTION_DEPLOY_JOB> {
  const erc721 = artifact('MintworksCollection');
  const erc1155 = artifact('MintworksItems');
  return contractDeployJob(ctx, {
    jobKind: COLLECTION_DEPLOY_JOB,
    txKind: COLLECTION_DEPLOY_TX,
    table: 'collections',
    onDeployed: mintsWaiting(ctx),
    load: (uid) => ctx.db.selectFrom('collections').selectAll().where('uid', '=', uid).executeTakeFirst(),
    // Every relayer is an operator of the collection (those a rotation brings in too): mints and edits go out from whichever is next.
    deployData: (c) => {
      const operators = ctx.sender.operators().map((r) => r.address);
      if (c.standard === 'ERC1155')
        return encodeDeployData({ abi: erc1155.abi, bytecode: erc1155.bytecode, args: [metadataBaseUri(ctx, c.uid), ctx.forwarder, operators] });
      return encodeDeployData({
        abi: erc721.abi,
        bytecode: erc721.bytecode,
        args: [c.name, c.symbol ?? '', metadataBaseUri(ctx, c.uid), c.editable === 1, ctx.forwarder, operators, c.soulbound === 1, ...collectionInfoArgs(c)],
      });
    },
    payload: (c) => ({ collection_uid: c.uid }),
  });
}

/** Outcome of a deployment: the collection is deployed, or the deployment is tried again. */
export function deployOutcome(ctx: ChainCtx): OutcomeHandler<typeof COLLECTION_DEPLOY_TX> {
  return contractDeployOutcome(ctx, { jobKind: COLLECTION_DEPLOY_JOB, table: 'collections', onDeployed: mintsWaiting(ctx) });
}

/**
 * Mints accepted while the collection was deploying go out once it is deployed: in the transaction that
 * marks it deployed, they are woken (an asset's mint by its user's group of jobs, an item's by its
 * collection's). Not beside a transaction deferring mints for this deployment (`deferUntilDeployed`):
 * those are either deferred already, and woken here, or read the collection deployed.
 */
export function mintsWaiting(ctx: ChainCtx) {
  return async (tx: Tx, uid: string) => {
    await lockForTransaction(tx, 'collectionDeployed', 'shared');
    // Only assets accepted while it deployed: a collection is deployed once.
    const users = await tx
      .selectFrom('assets')
      .select('mint_for_user_uid')
      .distinct()
      .where('collection_uid', '=', uid)
      .where('mint_status', '=', 'pending')
      .execute();
    await ctx.queue.wakeGroups(
      tx,
      MINT_JOB,
      users.map((u) => u.mint_for_user_uid),
    );
    await ctx.queue.wakeGroup(tx, ITEM_MINT_JOB, uid);
    return () => {
      ctx.queue.notify(MINT_JOB);
      ctx.queue.notify(ITEM_MINT_JOB);
    };
  };
}
