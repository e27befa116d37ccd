// Relaying transfers and burns: each pending request is signed with its owner's key as an ERC-2771
// forward request and relayed in a batch (users hold no gas); per request the batch's outcome is done,
// cancelled (executed but reverted, or out of attempts) or signed and sent again.
import { encodeFunctionData, getAddress, type Address, type Hex } from 'viem';
import type { ChainCtx, Ctx } from '../../context.js';
import type { Tx } from '../../../store/db.js';
import type { Job } from '../../../jobs/queue.js';
import type { JobHandler } from '../../../jobs/worker.js';
import { FORWARD_JOB } from '../../../jobs/kinds.js';
import type { ChainSigner } from '../../../chain/signer.js';
import { artifact } from '../../../chain/artifacts.js';
import { FORWARD_TX, type ForwardItem, type OutcomeHandler } from '../../../chain/outcomes.js';
import { encodeForwardBatch, forwardBatchGas, forwardResults, forwarderNonceAt, resyncForwarderNonce } from '../../../chain/forward.js';
import { nowIso } from '../../../util/time.js';
import { ownerOrGone } from '../../../chain/token-reads.js';
import { finishTransfer, type TransferRow } from './transfer.js';
import { finishBurn } from './burn.js';
import { MAX_ROUNDS } from './shared.js';
import { signForwardBatch } from '../../requests/forward-batch.js';

/** Signs each pending transfer/burn with its owner's key and relays them, one batch per relayer. */
// Long: a batch is grouped by relayer, signed and recorded in one pass that shares its groups.
export function forwardJobHandler(ctx: ChainCtx): JobHandler<typeof FORWARD_JOB> {
  const sender = ctx.sender;
  const collectionAbi = artifact('MintworksCollection').abi;
  const forwarder = ctx.forwarder;
  type Prepared = { job: Job<typeof FORWARD_JOB>; item: Omit<ForwardItem, 'signer' | 'nonce'>; userUid: string; to: Address; data: Hex };
  return {
    kind: FORWARD_JOB,
    batchSize: 50,
    leaseMs: 15_000,
    pollMs: 500,
    async handle(jobs) {
      const groups = new Map<string, { relayer: ChainSigner; jobs: Job<typeof FORWARD_JOB>[]; prepared: Prepared[] }>();
      for (const job of jobs) {
        const { action, round = 1 } = job.payload;
        const row =
          action === 'transfer'
            ? await ctx.db.selectFrom('transfers').selectAll().where('uid', '=', job.ref).executeTakeFirst()
            : await ctx.db.selectFrom('burns').selectAll().where('uid', '=', job.ref).executeTakeFirst();
        if (row?.status !== 'pending') {
          await ctx.queue.complete(ctx.db, job.id);
          continue;
        }
        const a = await tokenOf(ctx, row.asset_uid);
        if (!a) throw new Error(`asset ${row.asset_uid} of ${action} ${row.uid} not found`);
        const user = ctx.keys.user(row.from_user_uid);
        const data =
          action === 'transfer'
            ? encodeFunctionData({
                abi: collectionAbi,
                functionName: 'transferFrom',
                args: [user.address, getAddress((row as TransferRow).to_address), BigInt(a.token_id)],
              })
            : encodeFunctionData({ abi: collectionAbi, functionName: 'burn', args: [BigInt(a.token_id)] });
        const relayer = sender.relayerFor(user.address.toLowerCase());
        const g = groups.get(relayer.address) ?? { relayer, jobs: [], prepared: [] };
        g.jobs.push(job);
        g.prepared.push({
          job,
          item: { action, uid: row.uid, asset_uid: row.asset_uid, round },
          userUid: row.from_user_uid,
          to: getAddress(a.contract_address!),
          data,
        });
        groups.set(relayer.address, g);
      }
      for (const g of groups.values()) {
        const relayer = g.relayer;
        const row = await ctx.db.transaction().execute(async (tx) => {
          const { requests, items } = await signForwardBatch(tx, ctx, g.prepared, 150_000n);
          const r = await sender.record(tx, {
            kind: FORWARD_TX,
            ref: items[0].uid,
            payload: { items },
            to: forwarder,
            data: encodeForwardBatch(requests, relayer.address),
            gas: forwardBatchGas(requests),
            signer: relayer,
          });
          for (const j of g.jobs) await ctx.queue.complete(tx, j.id);
          return r;
        });
        await sender.broadcast([row]);
      }
    },
  };
}

/**
 * Applies a relayed batch: per request, executed (done), executed but failed (cancelled), or not
 * executed (retried). Before a failure path changes what the API says, the chain is asked: a burn whose
 * token is gone, or a transfer whose token is at its recipient, happened (an earlier attempt, a
 * receipt a provider did not serve), and is done whatever this transaction's receipt says.
 */
export function forwardOutcome(ctx: ChainCtx): OutcomeHandler<typeof FORWARD_TX> {
  const client = ctx.sender.client;
  const forwarder = ctx.forwarder;
  return async ({ payload: { items }, receipt, reason }) => {
    const results = receipt ? forwardResults(receipt, forwarder) : new Map<string, boolean>();
    // State at the receipt's block (or later): a backend behind it cannot answer from before it.
    const at = receipt?.blockNumber;
    const chainNonces = new Map<string, bigint>();
    const doneOnChain = new Set<string>();
    for (const it of items) {
      if (results.get(`${it.signer}:${it.nonce}`) === true) continue;
      if (await actionDoneOnChain(ctx, it, at)) doneOnChain.add(it.uid);
      else if (!results.has(`${it.signer}:${it.nonce}`) && !chainNonces.has(it.signer)) {
        chainNonces.set(it.signer, await forwarderNonceAt(client, forwarder, it.signer as Address, at));
      }
    }
    return async (tx) => {
      let retried = false;
      for (const it of items) {
        const r = results.get(`${it.signer}:${it.nonce}`);
        if (r === true || doneOnChain.has(it.uid)) await (it.action === 'transfer' ? finishTransfer(ctx, tx, it.uid) : finishBurn(ctx, tx, it.uid));
        else if (r === false)
          await cancelAction(ctx, tx, it, `the ${it.action} reverted on chain (the token is no longer in the user's wallet, or the contract refused it)`);
        else if (it.round >= MAX_ROUNDS)
          await cancelAction(ctx, tx, it, `the ${it.action} could not be executed on chain after ${MAX_ROUNDS} attempts: ${reason ?? 'request skipped'}`);
        else {
          // Not executed (nonce mismatch after a rewind, or the whole transaction failed): re-sign from the chain's nonce.
          await resyncForwarderNonce(tx, ctx.sender.chainId, it.signer as Address, chainNonces.get(it.signer)!);
          await ctx.queue.enqueue(tx, { kind: FORWARD_JOB, ref: it.uid, payload: { action: it.action, round: it.round + 1 } });
          retried = true;
        }
      }
      if (retried) return () => ctx.queue.notify(FORWARD_JOB);
    };
  };
}

/** An asset's token: its id and its collection's contract. */
function tokenOf(ctx: Ctx, assetUid: string) {
  return ctx.db
    .selectFrom('assets')
    .innerJoin('collections', 'collections.uid', 'assets.collection_uid')
    .select(['assets.token_id', 'collections.contract_address'])
    .where('assets.uid', '=', assetUid)
    .executeTakeFirst();
}

/** Whether the chain shows the request's effect: the token burned, or owned by the transfer's recipient. */
async function actionDoneOnChain(ctx: ChainCtx, it: ForwardItem, blockNumber: bigint | undefined): Promise<boolean> {
  const a = await tokenOf(ctx, it.asset_uid);
  if (!a?.contract_address) return false;
  const owner = await ownerOrGone(ctx.sender.client, a.contract_address, a.token_id, blockNumber);
  if (it.action === 'burn') return owner === null;
  const t = await ctx.db.selectFrom('transfers').select('to_address').where('uid', '=', it.uid).executeTakeFirst();
  return owner !== null && t !== undefined && owner === t.to_address.toLowerCase() && owner !== it.signer;
}

async function cancelAction(ctx: Ctx, tx: Tx, it: ForwardItem, reason: string): Promise<void> {
  const t = nowIso();
  const table = it.action === 'transfer' ? 'transfers' : 'burns';
  const r = await tx
    .updateTable(table)
    .set({ status: 'cancelled', reason, updated_at: t })
    .where('uid', '=', it.uid)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) return;
  await tx
    .updateTable('assets')
    .set({ [it.action === 'transfer' ? 'is_transferring' : 'is_burning']: 0, updated_at: t })
    .where('uid', '=', it.asset_uid)
    .execute();
  ctx.log.warn({ [it.action]: it.uid, asset: it.asset_uid, reason }, `${it.action} cancelled`);
}
