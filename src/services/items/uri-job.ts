// An edited item's announcement on chain. The service serves the edited document at the item's
// unchanged URI (baseURI + id), so nothing needs setting on the contract; marketplaces only learn of the
// change from the ERC-1155 `URI(value, id)` event, which the operator-only refreshURI(id) emits. PUT
// /item queues the job in the transaction that writes the edit, the job records the transaction before
// it is sent (the sender's exactly-once pipeline), and a failed one is queued again: a second event for
// the same edit is harmless, a lost one is not.
import { encodeFunctionData, type Address } from 'viem';
import type { ChainCtx } from '../context.js';
import type { JobHandler } from '../../jobs/worker.js';
import { ITEM_URI_JOB } from '../../jobs/kinds.js';
import { artifact } from '../../chain/artifacts.js';
import { ITEM_URI_TX, type OutcomeHandler } from '../../chain/outcomes.js';

/** How long a refresh whose transaction failed waits before it is queued again. */
const RETRY_DELAY_MS = 5000;

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
          .select(['items.uid', 'items.token_id', 'collections.contract_address', 'collections.status'])
          .where('items.uid', '=', job.ref)
          .executeTakeFirst();
        // A collection not yet deployed has no token anyone could have indexed: nothing to announce.
        if (!i?.contract_address || i.status !== 'deployed') {
          await ctx.queue.complete(ctx.db, job.id);
          continue;
        }
        const contract = i.contract_address;
        const tokenId = BigInt(i.token_id);
        const row = await ctx.db.transaction().execute(async (tx) => {
          const rec = await ctx.sender.record(tx, {
            kind: ITEM_URI_TX,
            ref: i.uid,
            payload: { item_uid: i.uid, contract, token_id: tokenId.toString() },
            to: contract as Address,
            data: encodeFunctionData({ abi, functionName: 'refreshURI', args: [tokenId] }),
            gas: 100_000n,
          });
          await ctx.queue.complete(tx, job.id);
          return rec;
        });
        await ctx.sender.broadcast([row]);
      }
    },
  };
}

export function itemUriOutcome(ctx: ChainCtx): OutcomeHandler<typeof ITEM_URI_TX> {
  return async ({ payload: p, receipt, reason }) =>
    async (tx) => {
      if (receipt?.status === 'success') return () => ctx.log.info({ item: p.item_uid, token_id: p.token_id }, 'item metadata refresh announced (URI event)');
      await ctx.queue.enqueue(tx, { kind: ITEM_URI_JOB, ref: p.item_uid, payload: {}, runAt: Date.now() + RETRY_DELAY_MS });
      return () => ctx.log.error({ item: p.item_uid, reason }, 'announcing an item edit on chain did not succeed; trying again');
    };
}
