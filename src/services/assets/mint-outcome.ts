// The outcome of a mint transaction: what the chain shows minted is marked so, with its events; what
// it does not show is queued for minting again (or fails for good). See mint-job.ts for the recording.
import { keccak256, pad, toHex, type TransactionReceipt } from 'viem';
import { sql } from 'kysely';
import type { ChainCtx, Ctx } from '../context.js';
import type { Tx } from '../../store/db.js';
import { ownerOrGone } from '../../chain/token-reads.js';
import type { MINT_TX, OutcomeHandler } from '../../chain/outcomes.js';
import { CANCELLED_REASON } from '../../chain/cancel.js';
import { nowIso } from '../../util/time.js';
import { emitEvent, emitEvents } from '../events.js';
import { executeHeld } from '../../store/inserts.js';
import { assetView, assetViewColumns } from '../asset-view.js';
import { MINT_JOB } from '../../jobs/kinds.js';
import { getAsset } from './reads.js';
import { markedAsLogged, type AppliedMints } from '../../chain/applied-mints.js';

const MAX_MINT_ROUNDS = 5;

const TRANSFER_TOPIC = keccak256(toHex('Transfer(address,address,uint256)'));
const ZERO_TOPIC = pad('0x00');

/** Token ids minted (Transfer from the zero address) by `contract` in a receipt: read off the topics. */
export function mintedTokenIds(receipt: TransactionReceipt, contract: string): Set<number> {
  const minted = new Set<number>();
  if (receipt.status !== 'success') return minted;
  const address = contract.toLowerCase();
  for (const log of receipt.logs) {
    const [topic, from, , id] = log.topics;
    if (topic === TRANSFER_TOPIC && from === ZERO_TOPIC && id && log.address.toLowerCase() === address) minted.add(Number(BigInt(id)));
  }
  return minted;
}

/**
 * Applies a mint transaction. An asset counts as minted only when the chain shows it: a Transfer from
 * the zero address in this receipt, or else (reverted, dropped, rewound) `ownerOf` on the contract.
 * What the chain does not have is queued for minting again with the same token id. The minted ones
 * are marked, with their events, in one statement each. `appliedMints` is told, once committed, of a
 * transaction whose every mint this marked as its receipt shows it.
 */
export function mintOutcome(ctx: ChainCtx, appliedMints: AppliedMints): OutcomeHandler<typeof MINT_TX> {
  const client = ctx.sender.client;
  return async ({ row, payload: p, receipt, reason }) => {
    const mintedHere = receipt ? mintedTokenIds(receipt, p.contract) : new Set<number>();
    const exists = new Map<number, boolean>();
    for (const item of p.items) {
      if (mintedHere.has(item.token_id)) continue;
      // A revert says the token does not exist; a node that does not answer says nothing, and the
      // outcome waits for the next pass (as "not minted" it would be queued to mint again).
      exists.set(item.token_id, (await ownerOrGone(client, p.contract, item.token_id)) !== null);
    }
    const onChain = p.items.filter((i) => mintedHere.has(i.token_id) || exists.get(i.token_id));
    return async (tx) => {
      const retry: string[] = [];
      // The outcome is final for this transaction: its assets are in it no longer (minted, failed or
      // queued again). On PostgreSQL sent with the mark that follows.
      await executeHeld(
        tx,
        tx
          .deleteFrom('in_flight_mints')
          .where('collection_uid', '=', p.collection_uid)
          .where(
            'token_id',
            'in',
            p.items.map((i) => i.token_id),
          )
          .where('tx_id', '=', row.id),
      );
      const marked = await markMinted(
        ctx,
        tx,
        onChain.map((i) => i.asset_uid),
        row.id,
      );
      for (const item of p.items) {
        if (mintedHere.has(item.token_id) || exists.get(item.token_id)) continue;
        if (await mintAgainOrFail(ctx, tx, item.asset_uid, (p.rounds[item.asset_uid] ?? 1) + 1, reason)) retry.push(item.asset_uid);
      }
      const applied = receipt && markedAsLogged(p.items, mintedHere, marked) ? receipt.transactionHash : null;
      if (retry.length === 0 && !applied) return;
      return () => {
        if (applied) appliedMints.add(applied, p.contract);
        if (retry.length === 0) return;
        ctx.log.warn({ tx: row.id, assets: retry.length, reason: reason ?? 'not on chain' }, 'mint not confirmed on chain, minting again');
        ctx.queue.notify(MINT_JOB);
      };
    };
  };
}

/**
 * An asset its transaction did not mint: queued for minting again (round `round`), or failed for good
 * after MAX_MINT_ROUNDS or when the operator cancelled the transaction. True when it is queued again.
 */
async function mintAgainOrFail(ctx: ChainCtx, tx: Tx, assetUid: string, round: number, reason: string | undefined): Promise<boolean> {
  const asset = await tx.selectFrom('assets').select(['app_uid', 'mint_for_user_uid']).where('uid', '=', assetUid).executeTakeFirst();
  if (!asset) return false;
  // A mint the operator cancelled ends failed at once: minting it again is not what they asked for.
  const cancelled = reason === CANCELLED_REASON;
  if (round > MAX_MINT_ROUNDS || cancelled) {
    const error = cancelled ? `mint ${CANCELLED_REASON}` : `mint failed ${MAX_MINT_ROUNDS} times: ${reason ?? 'not on chain'}`;
    await tx
      .updateTable('assets')
      .set({ mint_status: 'failed', mint_error: error, mint_tx_id: null, updated_at: nowIso() })
      .where('uid', '=', assetUid)
      .execute();
    const view = await getAsset(ctx, asset.app_uid, assetUid, tx);
    await emitEvent(tx, asset.app_uid, 'asset.mint_failed', { asset: view });
    return false;
  }
  await tx.updateTable('assets').set({ mint_status: 'pending', mint_tx_id: null, updated_at: nowIso() }).where('uid', '=', assetUid).execute();
  await ctx.queue.enqueue(tx, { kind: MINT_JOB, ref: assetUid, groupKey: asset.mint_for_user_uid, payload: { round } });
  return true;
}

/**
 * Marks assets minted by transaction `txId`, with an `asset.minted` event each. Idempotent: an asset
 * already minted is skipped (outcomes are re-applied after a rewind), by the statement itself, so an
 * asset another worker has marked gets no second event. The statement returns the rows as marked,
 * which is all their events need beside their collection's name and address (read once per collection).
 * Returns the rows it marked.
 */
async function markMinted(ctx: Ctx, tx: Tx, assetUids: string[], txId: number): Promise<{ uid: string; owner_address: string | null }[]> {
  if (assetUids.length === 0) return [];
  // The owner is the wallet the token was minted to; the URI the prepared document's or else the
  // collection's metadata route for the token id.
  const marked = await tx
    .updateTable('assets')
    .set((eb) => ({
      mint_status: 'minted',
      mint_tx_id: txId,
      owner_user_uid: eb.ref('mint_for_user_uid'),
      owner_address: eb.ref('mint_for_address'),
      token_uri: sql<string>`case when pending_token_uri like 'ipfs://%' then pending_token_uri else ${`${ctx.installation.publicUrl}/metadata/`} || collection_uid || '/' || cast(token_id as text) end`,
      updated_at: nowIso(),
    }))
    .where('uid', 'in', assetUids)
    .where('mint_status', '!=', 'minted')
    // Only what the events print: on SQLite each column returned is a value made per row (a drained
    // database of 10,000 assets: 52 ms returning the uids alone, 80 these 19 columns, 85 all 26).
    .returning([...assetViewColumns, 'app_uid'])
    .execute();
  if (marked.length === 0) return marked;
  const collectionUids = [...new Set(marked.map((a) => a.collection_uid))];
  const collections = new Map(
    (await tx.selectFrom('collections').select(['uid', 'name', 'contract_address', 'chain_id']).where('uid', 'in', collectionUids).execute()).map((c) => [
      c.uid,
      c,
    ]),
  );
  const byApp = new Map<string, Record<string, unknown>[]>();
  for (const a of marked) {
    const list = byApp.get(a.app_uid) ?? [];
    list.push({ asset: assetView(a, collections.get(a.collection_uid)!, ctx.installation) });
    byApp.set(a.app_uid, list);
  }
  for (const [appUid, data] of byApp) await emitEvents(tx, appUid, 'asset.minted', data);
  return marked;
}
