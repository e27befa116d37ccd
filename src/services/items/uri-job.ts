// An item's document on chain. An item with an IPFS document (production Apps, prepare-job.ts) has its
// CID set on the contract, setTokenCID(id, digest, dagPb), so that `uri(id)` answers `ipfs://<cid>`; the
// call emits the ERC-1155 `URI(value, id)` event. Otherwise the service serves the edited document at the
// item's unchanged URI (baseURI + id), so nothing needs setting; marketplaces only learn of the change
// from the URI event, which the operator-only refreshURI(id) emits. The job is queued in the transaction
// that writes the document, records the transaction before it is sent (the sender's exactly-once
// pipeline), and a failed one is queued again: a second event for the same document is harmless, a lost
// one is not. Two CIDs in flight may land in either order, so a success re-reads the item and sends
// again when its CID is no longer the one that landed; a job whose CID is already on its way (the
// item's latest transaction, not failed) sends nothing, so an edit announces its document once.
import { encodeFunctionData, type Address } from 'viem';
import type { ChainCtx } from '../context.js';
import type { JobHandler } from '../../jobs/worker.js';
import { ITEM_URI_JOB } from '../../jobs/kinds.js';
import { artifact } from '../../chain/artifacts.js';
import { ITEM_URI_TX, type OutcomeHandler } from '../../chain/outcomes.js';
import { cidArg } from '../../chain/token-uri.js';
import { lockForUpdate } from '../../store/locks.js';
import type { Tx } from '../../store/db.js';

/** How long a refresh whose transaction failed waits before it is queued again. */
const RETRY_DELAY_MS = 5000;
/** setTokenCID: a fresh digest slot and codec bitmap word (22.1k each) and the URI log, with room. */
const SET_CID_GAS = 150_000n;

export function itemUriJobHandler(ctx: ChainCtx): JobHandler<typeof ITEM_URI_JOB> {
  const { abi } = artifact('MintworksItems');
  return {
    kind: ITEM_URI_JOB,
    batchSize: 20,
    leaseMs: 30_000,
    pollMs: 1000,
    async handle(jobs) {
      for (const job of jobs) {
        const i = await ctx.db
          .selectFrom('items')
          .innerJoin('collections', 'collections.uid', 'items.collection_uid')
          .select(['items.uid', 'items.token_id', 'items.token_uri', 'collections.contract_address', 'collections.status'])
          .where('items.uid', '=', job.ref)
          .executeTakeFirst();
        // A CID waits for its contract; a refresh of a collection not yet deployed has nothing to announce
        // (no token anyone could have indexed), nor has anything of a collection that failed to deploy.
        if (i?.token_uri && i.status === 'deploying') {
          await ctx.queue.defer(ctx.db, job, RETRY_DELAY_MS);
          continue;
        }
        if (!i?.contract_address || i.status !== 'deployed') {
          await ctx.queue.complete(ctx.db, job.id);
          continue;
        }
        const contract = i.contract_address;
        const tokenId = BigInt(i.token_id);
        const cid = i.token_uri ? cidArg(i.token_uri) : null;
        const row = await ctx.db.transaction().execute(async (tx) => {
          if (cid && (await cidOnItsWay(tx, i.uid, i.token_uri))) {
            await ctx.queue.complete(tx, job.id);
            return null;
          }
          const rec = await ctx.sender.record(tx, {
            kind: ITEM_URI_TX,
            ref: i.uid,
            payload: { item_uid: i.uid, contract, token_id: tokenId.toString(), ...(i.token_uri ? { token_uri: i.token_uri } : {}) },
            to: contract as Address,
            data: cid
              ? encodeFunctionData({ abi, functionName: 'setTokenCID', args: [tokenId, cid.digest, cid.dagPb] })
              : encodeFunctionData({ abi, functionName: 'refreshURI', args: [tokenId] }),
            gas: cid ? SET_CID_GAS : 100_000n,
          });
          await ctx.queue.complete(tx, job.id);
          return rec;
        });
        if (row) await ctx.sender.broadcast([row]);
      }
    },
  };
}

/**
 * Whether the item's latest setTokenCID already carries this document and has not failed (signed, sent
 * or mined): a second job for the same CID then has nothing to send. Two jobs can ask for the same one,
 * the edit's own and the one an older CID's landing queues when it finds the item edited since. The
 * item's row is locked first, so that jobs in two worker processes cannot both find none and both send.
 */
async function cidOnItsWay(tx: Tx, itemUid: string, tokenUri: string | null): Promise<boolean> {
  await lockForUpdate(tx.selectFrom('items').select('uid').where('uid', '=', itemUid)).execute();
  const last = await tx
    .selectFrom('chain_txs')
    .select(['payload', 'status'])
    .where('kind', '=', ITEM_URI_TX)
    .where('ref', '=', itemUid)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return !!last && last.status !== 'reverted' && (JSON.parse(last.payload) as { token_uri?: string }).token_uri === tokenUri;
}

export function itemUriOutcome(ctx: ChainCtx): OutcomeHandler<typeof ITEM_URI_TX> {
  return async ({ payload: p, receipt, reason }) =>
    async (tx) => {
      if (receipt?.status === 'success') {
        const now = p.token_uri ? await tx.selectFrom('items').select('token_uri').where('uid', '=', p.item_uid).executeTakeFirst() : undefined;
        if (now && now.token_uri !== p.token_uri) {
          await ctx.queue.enqueue(tx, { kind: ITEM_URI_JOB, ref: p.item_uid, payload: {} });
          return () => ctx.log.info({ item: p.item_uid, token_uri: p.token_uri }, 'an older item CID landed; sending the current one');
        }
        return () => ctx.log.info({ item: p.item_uid, token_id: p.token_id, token_uri: p.token_uri }, 'item metadata set on chain (URI event)');
      }
      await ctx.queue.enqueue(tx, { kind: ITEM_URI_JOB, ref: p.item_uid, payload: {}, runAt: Date.now() + RETRY_DELAY_MS });
      return () => ctx.log.error({ item: p.item_uid, reason }, 'announcing an item edit on chain did not succeed; trying again');
    };
}
