// A collection's changeable options (royalty, description, image, external link) and the ERC-7572
// contract document built from them. The document is stored as asset metadata is: development Apps in
// the service's content-addressed files (PUBLIC_URL/files/<sha256>), production Apps on IPFS
// (ipfs://<cid>, published when a node or pinning service is configured). A change stores the new
// document, records it with the options in one transaction with a job, and the job sends
// setCollectionInfo (royalty + contract URI, ContractURIUpdated) to a deployed contract. The job sends
// what the record holds when it runs, so sending it twice, or after a later change, is harmless.
import { encodeFunctionData, zeroAddress, type Address } from 'viem';
import type { Selectable } from 'kysely';
import type { ChainCtx, Ctx } from '../context.js';
import type { CollectionTable } from '../../store/schema.js';
import type { JobHandler } from '../../jobs/worker.js';
import type { AppEnvironment } from '../../domain/environment.js';
import { recordAudit, type Actor } from '../audit.js';
import { artifact } from '../../chain/artifacts.js';
import { COLLECTION_INFO_TX, type OutcomeHandler } from '../../chain/outcomes.js';
import { COLLECTION_INFO_JOB, PUBLISH_JOB } from '../../jobs/kinds.js';
import { queueOn } from '../../jobs/queue.js';
import { metadataStorage } from '../../metadata/store.js';
import { enqueuePublish } from '../../metadata/publish.js';
import { contractDocument, resolveRoyalty, type ChangeableOptions, type ContractDocumentSource, type Royalty } from '../../domain/collection-options.js';
import { ApiError } from '../../util/errors.js';

/** How long a change waits for its collection's deployment before it looks again. */
const DEPLOY_WAIT_MS = 3000;

/** Stores the collection's contract document; returns the URI its contract points at. */
export async function storeContractDocument(ctx: Ctx, environment: AppEnvironment, collectionUid: string, source: ContractDocumentSource): Promise<string> {
  const storage = metadataStorage(ctx.config);
  const bytes = Buffer.from(JSON.stringify(contractDocument(source)), 'utf8');
  if (environment !== 'production') return `${ctx.installation.publicUrl}/files/${await storage.files.put(bytes)}`;
  const cid = (await storage.addToIpfs(bytes)).toString();
  // Stored before the record points at it; published on its own (the gateway serves it meanwhile).
  if (await enqueuePublish(ctx, ctx.db, [{ cid, name: `${collectionUid}-contract.json` }])) ctx.queue.notify(PUBLISH_JOB);
  return `ipfs://${cid}`;
}

/** Refuses what a collection cannot have: the royalty checks (domain/collection-options.ts). */
export function royaltyOrThrow(change: ChangeableOptions, current: Royalty) {
  const r = resolveRoyalty(change, current);
  if (!r.ok) throw ApiError.validation(r.problems);
  return r.royalty;
}

/** PATCH /admin/v1/apps/<uid>/collections/<collection>: the changeable options; null clears one. */
export async function updateCollection(ctx: Ctx, appUid: string, uid: string, change: ChangeableOptions, actor?: Actor): Promise<void> {
  const c = await ctx.db.selectFrom('collections').selectAll().where('uid', '=', uid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!c) throw ApiError.notFound('Collection');
  const app = await ctx.db.selectFrom('apps').select('environment').where('uid', '=', appUid).executeTakeFirstOrThrow();
  // The items contract (ERC-1155) has no royalty or contract URI: its texts change, nothing goes on chain.
  const items = c.standard === 'ERC1155';
  if (items && (change.royalty_receiver != null || change.royalty_bps != null))
    throw ApiError.validation(
      (['royalty_receiver', 'royalty_bps'] as const)
        .filter((f) => change[f] != null)
        .map((field) => ({ field, code: 'invalid', message: 'ERC-1155 collections take no royalty or soulbound option.' })),
    );
  const royalty = royaltyOrThrow(change, c);
  const next: ContractDocumentSource = {
    name: c.name,
    description: change.description === undefined ? c.description : change.description,
    image_url: change.image_url === undefined ? c.image_url : change.image_url,
    external_url: change.external_url === undefined ? c.external_url : change.external_url,
    ...royalty,
  };
  const contractUri = items ? null : await storeContractDocument(ctx, app.environment as AppEnvironment, uid, next);
  const chainId = Number(c.chain_id);
  await ctx.db.transaction().execute(async (tx) => {
    await tx
      .updateTable('collections')
      .set({ description: next.description, image_url: next.image_url, external_url: next.external_url, ...royalty, contract_uri: contractUri })
      .where('uid', '=', uid)
      .execute();
    if (!items) await queueOn(ctx, chainId).enqueue(tx, { kind: COLLECTION_INFO_JOB, ref: uid });
    if (actor) await recordAudit(tx, actor, { action: 'collection.updated', app_uid: appUid, chain_id: chainId, details: { collection: uid, ...change } });
  });
  queueOn(ctx, chainId).notify(COLLECTION_INFO_JOB);
}

/** setCollectionInfo's arguments for a record: a zero receiver means "no royalty". */
export function collectionInfoArgs(c: Pick<Selectable<CollectionTable>, 'royalty_receiver' | 'royalty_bps' | 'contract_uri'>) {
  return [(c.royalty_receiver ?? zeroAddress) as Address, BigInt(c.royalty_bps ?? 0), c.contract_uri ?? ''] as const;
}

export function collectionInfoJobHandler(ctx: ChainCtx): JobHandler<typeof COLLECTION_INFO_JOB> {
  const { abi } = artifact('MintworksCollection');
  return {
    kind: COLLECTION_INFO_JOB,
    batchSize: 20,
    leaseMs: 30_000,
    pollMs: 1000,
    async handle(jobs) {
      for (const job of jobs) {
        const c = await ctx.db.selectFrom('collections').selectAll().where('uid', '=', job.ref).executeTakeFirst();
        if (!c || c.standard === 'ERC1155') {
          await ctx.queue.complete(ctx.db, job.id);
          continue;
        }
        if (c.status !== 'deployed' || !c.contract_address) {
          // Its deployment may have been signed with the options before this change: look again once deployed.
          await ctx.db.transaction().execute(async (tx) => {
            await ctx.queue.complete(tx, job.id);
            await ctx.queue.enqueue(tx, { kind: COLLECTION_INFO_JOB, ref: c.uid, runAt: Date.now() + DEPLOY_WAIT_MS });
          });
          continue;
        }
        const contract = c.contract_address;
        const data = encodeFunctionData({ abi, functionName: 'setCollectionInfo', args: collectionInfoArgs(c) });
        const row = await ctx.db.transaction().execute(async (tx) => {
          const rec = await ctx.sender.record(tx, {
            kind: COLLECTION_INFO_TX,
            ref: c.uid,
            payload: { collection_uid: c.uid, contract, contract_uri: c.contract_uri ?? '' },
            to: contract as Address,
            data,
            gas: 300_000n + BigInt(Buffer.byteLength(c.contract_uri ?? '')) * 800n,
          });
          await ctx.queue.complete(tx, job.id);
          return rec;
        });
        await ctx.sender.broadcast([row]);
      }
    },
  };
}

export function collectionInfoOutcome(ctx: ChainCtx): OutcomeHandler<typeof COLLECTION_INFO_TX> {
  return async ({ payload: p, receipt, reason }) =>
    async (tx) => {
      if (receipt?.status === 'success')
        return () => ctx.log.info({ collection: p.collection_uid, contract_uri: p.contract_uri }, 'collection info set on chain');
      await ctx.queue.enqueue(tx, { kind: COLLECTION_INFO_JOB, ref: p.collection_uid, runAt: Date.now() + 5000 });
      return () => ctx.log.error({ collection: p.collection_uid, reason }, 'setting the collection info did not succeed; trying again');
    };
}
