// Relaying item transfers and burns: each pending request is signed with its holder's key as an ERC-2771
// forward request and relayed in a batch (users hold no gas), as assets' are. Per request the outcome is
// done (balances read again, with item.transferred or item.burned), cancelled (executed but reverted:
// the reservation is given back) or signed and sent again. A request missing from the receipt whose
// forwarder nonce the chain has used was executed by another transaction: the forwarder's log for that
// nonce gives its verdict, so a request is never carried out twice.
import { encodeFunctionData, getAddress, parseAbiItem, type Address, type Hex, type PublicClient } from 'viem';
import type { ChainCtx } from '../context.js';
import type { Job } from '../../jobs/queue.js';
import type { JobHandler } from '../../jobs/worker.js';
import { ITEM_FORWARD_JOB } from '../../jobs/kinds.js';
import type { ChainSigner } from '../../chain/signer.js';
import { artifact } from '../../chain/artifacts.js';
import { ITEM_FORWARD_TX, type ItemForwardItem, type OutcomeHandler } from '../../chain/outcomes.js';
import { encodeForwardBatch, forwardBatchGas, forwardResults, forwarderNonceAt, resyncForwarderNonce } from '../../chain/forward.js';
import { emitEvent } from '../events.js';
import { MAX_ROUNDS } from '../assets/lifecycle/shared.js';
import { signForwardBatch } from '../requests/forward-batch.js';
import { endItemAction } from './actions.js';
import { readHeld, writeHeld, type Holding } from './balances.js';
import { itemBurnView, itemTransferView, itemView } from './views.js';

/** Gas a forwarded safeTransferFrom or burn of an ERC-1155 may use (~60k for a new holder). */
const ITEM_ACTION_GAS = 150_000n;
const executedEvent = parseAbiItem('event ExecutedForwardRequest(address indexed signer, uint256 nonce, bool success)');
/** How far back the forwarder's log is searched for a request another transaction executed. */
const VERDICT_LOOKBACK = 50_000n;

/** The request, its token and its contract, as a relay needs them. */
async function actionOf(ctx: ChainCtx, action: 'transfer' | 'burn', uid: string) {
  const table = action === 'transfer' ? 'item_transfers' : 'item_burns';
  const row = await ctx.db.selectFrom(table).selectAll().where('uid', '=', uid).executeTakeFirst();
  if (!row) return undefined;
  const item = await ctx.db
    .selectFrom('items')
    .innerJoin('collections', 'collections.uid', 'items.collection_uid')
    .select(['items.token_id', 'collections.contract_address'])
    .where('items.uid', '=', row.item_uid)
    .executeTakeFirstOrThrow();
  return { row: row as typeof row & { to_address?: string }, tokenId: BigInt(item.token_id), contract: item.contract_address! };
}

// Long: a batch is grouped by relayer, signed and recorded in one pass that shares its groups.
export function itemForwardJobHandler(ctx: ChainCtx): JobHandler<typeof ITEM_FORWARD_JOB> {
  const sender = ctx.sender;
  const itemsAbi = artifact('MintworksItems').abi;
  const forwarder = ctx.forwarder;
  type Prepared = { item: Omit<ItemForwardItem, 'signer' | 'nonce'>; userUid: string; to: Address; data: Hex };
  return {
    kind: ITEM_FORWARD_JOB,
    batchSize: 50,
    leaseMs: 15_000,
    pollMs: 500,
    async handle(jobs) {
      const groups = new Map<string, { relayer: ChainSigner; jobs: Job<typeof ITEM_FORWARD_JOB>[]; prepared: Prepared[] }>();
      for (const job of jobs) {
        const { action, round = 1 } = job.payload;
        const a = await actionOf(ctx, action, job.ref);
        if (a?.row.status !== 'pending') {
          await ctx.queue.complete(ctx.db, job.id);
          continue;
        }
        const user = ctx.keys.user(a.row.from_user_uid);
        const data =
          action === 'transfer'
            ? encodeFunctionData({
                abi: itemsAbi,
                functionName: 'safeTransferFrom',
                args: [user.address, getAddress(a.row.to_address!), a.tokenId, BigInt(a.row.amount), '0x'],
              })
            : encodeFunctionData({ abi: itemsAbi, functionName: 'burn', args: [user.address, a.tokenId, BigInt(a.row.amount)] });
        const relayer = sender.relayerFor(user.address.toLowerCase());
        const g = groups.get(relayer.address) ?? { relayer, jobs: [], prepared: [] };
        g.jobs.push(job);
        g.prepared.push({ item: { action, uid: a.row.uid, round }, userUid: a.row.from_user_uid, to: getAddress(a.contract), data });
        groups.set(relayer.address, g);
      }
      for (const g of groups.values()) {
        const row = await ctx.db.transaction().execute(async (tx) => {
          const { requests, items } = await signForwardBatch(tx, ctx, g.prepared, ITEM_ACTION_GAS);
          const r = await sender.record(tx, {
            kind: ITEM_FORWARD_TX,
            ref: items[0].uid,
            payload: { items },
            to: forwarder,
            data: encodeForwardBatch(requests, g.relayer.address),
            gas: forwardBatchGas(requests),
            signer: g.relayer,
          });
          for (const j of g.jobs) await ctx.queue.complete(tx, j.id);
          return r;
        });
        await sender.broadcast([row]);
      }
    },
  };
}

/** The forwarder's verdict on a signer's request `nonce` in blocks up to `toBlock`: true/false, or null when not found. */
async function verdictInLog(client: PublicClient, forwarder: Address, signer: string, nonce: bigint, toBlock: bigint): Promise<boolean | null> {
  const fromBlock = toBlock > VERDICT_LOOKBACK ? toBlock - VERDICT_LOOKBACK : 0n;
  const logs = await client.getLogs({ address: forwarder, event: executedEvent, args: { signer: signer as Address }, fromBlock, toBlock });
  const hit = logs.find((l) => l.args.nonce === nonce);
  return hit ? hit.args.success === true : null;
}

// Long: each outcome of a relayed batch (done, cancelled, sent again) is decided from one receipt.
export function itemForwardOutcome(ctx: ChainCtx): OutcomeHandler<typeof ITEM_FORWARD_TX> {
  const client = ctx.sender.client;
  const forwarder = ctx.forwarder;
  return async ({ payload: { items }, receipt, reason }) => {
    const block = receipt?.blockNumber ?? (await client.getBlockNumber({ cacheTime: 0 }));
    const results = receipt ? forwardResults(receipt, forwarder) : new Map<string, boolean>();
    const chainNonces = new Map<string, bigint>();
    const verdicts = new Map<string, boolean>();
    const balances = new Map<string, { holdings: Holding[]; held: bigint[] }>();
    for (const it of items) {
      let verdict = results.get(`${it.signer}:${it.nonce}`);
      if (verdict === undefined) {
        if (!chainNonces.has(it.signer)) chainNonces.set(it.signer, await forwarderNonceAt(client, forwarder, it.signer as Address, block));
        // The nonce is used: another transaction executed the request.
        if (chainNonces.get(it.signer)! > BigInt(it.nonce)) verdict = (await verdictInLog(client, forwarder, it.signer, BigInt(it.nonce), block)) ?? undefined;
      }
      if (verdict === undefined) continue;
      verdicts.set(it.uid, verdict);
      if (verdict) balances.set(it.uid, await holdingsAfter(ctx, it, block));
    }
    return async (tx) => {
      let retried = false;
      for (const it of items) {
        const verdict = verdicts.get(it.uid);
        if (verdict === true) {
          const ended = await endItemAction(tx, it.action, it.uid, 'done', null);
          if (!ended) continue;
          const b = balances.get(it.uid)!;
          for (const [k, h] of b.holdings.entries()) await writeHeld(tx, h, b.held[k], block);
          const item = itemView(await tx.selectFrom('items').selectAll().where('uid', '=', ended.item_uid).executeTakeFirstOrThrow(), ctx.installation);
          if (it.action === 'transfer') await emitEvent(tx, ended.app_uid, 'item.transferred', { item, transfer: itemTransferView(ended as never) });
          else await emitEvent(tx, ended.app_uid, 'item.burned', { item, burn: itemBurnView(ended) });
        } else if (verdict === false) {
          const why = `the ${it.action} reverted on chain (the user no longer holds the amount, or the contract refused it)`;
          if (await endItemAction(tx, it.action, it.uid, 'cancelled', why)) ctx.log.warn({ [it.action]: it.uid, reason: why }, `item ${it.action} cancelled`);
        } else if (it.round >= MAX_ROUNDS) {
          await endItemAction(
            tx,
            it.action,
            it.uid,
            'cancelled',
            `the ${it.action} could not be executed on chain after ${MAX_ROUNDS} attempts: ${reason ?? 'request skipped'}`,
          );
        } else {
          // Not executed (a nonce mismatch after a rewind, or the whole transaction failed): re-sign from the chain's nonce.
          await resyncForwarderNonce(tx, ctx.sender.chainId, it.signer as Address, chainNonces.get(it.signer)!);
          await ctx.queue.enqueue(tx, { kind: ITEM_FORWARD_JOB, ref: it.uid, payload: { action: it.action, round: it.round + 1 } });
          retried = true;
        }
      }
      if (retried) return () => ctx.queue.notify(ITEM_FORWARD_JOB);
    };
  };
}

/** The balances an executed request changed (the sender's, and a recipient who is a user of the App), read at `block`. */
async function holdingsAfter(ctx: ChainCtx, it: ItemForwardItem, block: bigint): Promise<{ holdings: Holding[]; held: bigint[] }> {
  const table = it.action === 'transfer' ? 'item_transfers' : 'item_burns';
  const row = (await ctx.db.selectFrom(table).selectAll().where('uid', '=', it.uid).executeTakeFirstOrThrow()) as {
    app_uid: string;
    item_uid: string;
    from_user_uid: string;
    to_address?: string;
  };
  const item = await ctx.db
    .selectFrom('items')
    .innerJoin('collections', 'collections.uid', 'items.collection_uid')
    .select(['items.token_id', 'collections.contract_address'])
    .where('items.uid', '=', row.item_uid)
    .executeTakeFirstOrThrow();
  const holdings: Holding[] = [{ item_uid: row.item_uid, user_uid: row.from_user_uid, address: it.signer, token_id: Number(item.token_id) }];
  if (row.to_address) {
    const to = await ctx.db
      .selectFrom('users')
      .select('uid')
      .where('app_uid', '=', row.app_uid)
      .where('wallet_address', '=', row.to_address.toLowerCase())
      .executeTakeFirst();
    if (to) holdings.push({ item_uid: row.item_uid, user_uid: to.uid, address: row.to_address.toLowerCase(), token_id: Number(item.token_id) });
  }
  return { holdings, held: await readHeld(ctx.sender.client, item.contract_address!, holdings, block) };
}
