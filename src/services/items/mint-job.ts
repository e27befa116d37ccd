// Item mints on chain: the pending mints of an ERC-1155 collection go out together in one mintBatch
// (many users, one transaction). Exactly once: each mint carries its collection's mint number, which
// the contract mints once; a mint is done when the chain says its number is used (mintsUsed), whichever
// transaction used it, and is sent again (alone, after a failed batch) while it is not.
import { encodeFunctionData, getAddress, type Address } from 'viem';
import type { ChainCtx } from '../context.js';
import type { Job } from '../../jobs/queue.js';
import type { JobHandler } from '../../jobs/worker.js';
import { ITEM_MINT_JOB } from '../../jobs/kinds.js';
import type { Tx } from '../../store/db.js';
import { lockForUpdate } from '../../store/locks.js';
import { artifact } from '../../chain/artifacts.js';
import { ITEM_MINT_TX, type ItemMintItem, type OutcomeHandler, type OutcomePayloads } from '../../chain/outcomes.js';
import { nowIso } from '../../util/time.js';
import { amountFromDb } from '../../domain/items.js';
import { emitEvent } from '../events.js';
import { deferUntilDeployed } from '../collections/contract-deploy.js';
import { readHeld, writeHeld, type Holding } from './balances.js';
import { itemMintView, itemView, type ItemMintRow, type ItemRow } from './views.js';

export const MAX_ITEM_MINT_ROUNDS = 5;

/** Gas of a mintBatch: a new holder of a new id costs ~75k (mint number, supply, balance, log); generous. */
export const itemMintGas = (n: number): bigint => BigInt(80_000 + 100_000 * n);

/** Mints pending item mints, one mintBatch per collection (at most 100 mints each). */
// Long: a batch is read, grouped by collection and sent in one pass that shares its groups.
export function itemMintJobHandler(ctx: ChainCtx): JobHandler<typeof ITEM_MINT_JOB> {
  const sender = ctx.sender;
  const { abi } = artifact('MintworksItems');
  type Group = { collectionUid: string; contract: string; jobs: Job<typeof ITEM_MINT_JOB>[]; rows: MintToSend[] };
  return {
    kind: ITEM_MINT_JOB,
    batchSize: Math.min(ctx.config.mintBatchSize, 100),
    leaseMs: 10_000,
    pollMs: 500,
    lingerMs: 50, // a burst of mints shares transactions
    async handle(jobs) {
      const rows = await mintsToSend(
        ctx,
        jobs.map((j) => j.ref),
      );
      const byUid = new Map(rows.map((r) => [r.uid, r]));
      const groups: Group[] = [];
      const shared = new Map<string, Group>();
      const undeployed: { job: Job<typeof ITEM_MINT_JOB>; uid: string }[] = [];
      for (const job of jobs) {
        const m = byUid.get(job.ref);
        if (m?.status !== 'pending' || m.tx_id !== null) {
          await ctx.queue.complete(ctx.db, job.id); // done, failed, gone, or already in a transaction
          continue;
        }
        if (m.collection_status !== 'deployed' || !m.contract_address) {
          undeployed.push({ job, uid: m.collection_uid }); // its deployment wakes it
          continue;
        }
        // A retry after a failed batch goes alone, so a bad mint cannot sink the others again.
        let g = job.payload.solo ? undefined : shared.get(m.collection_uid);
        if (!g) {
          g = { collectionUid: m.collection_uid, contract: m.contract_address, jobs: [], rows: [] };
          groups.push(g);
          if (!job.payload.solo) shared.set(m.collection_uid, g);
        }
        g.jobs.push(job);
        g.rows.push(m);
      }
      await deferUntilDeployed(ctx, { table: 'collections', jobKind: ITEM_MINT_JOB, lock: 'collectionDeployed' }, undeployed);
      for (const g of groups) {
        const data = encodeFunctionData({
          abi,
          functionName: 'mintBatch',
          args: [
            g.rows.map((m) => getAddress(m.to_address)),
            g.rows.map((m) => BigInt(m.token_id)),
            g.rows.map((m) => BigInt(m.amount)),
            g.rows.map((m) => (m.max_supply === null ? 0n : BigInt(m.max_supply))),
            g.rows.map((m) => BigInt(m.seq)),
          ],
        });
        const items: ItemMintItem[] = g.rows.map((m) => ({ uid: m.uid, seq: Number(m.seq) }));
        const rounds = Object.fromEntries(g.jobs.map((j) => [j.ref, j.payload.round ?? 1]));
        const payload: OutcomePayloads[typeof ITEM_MINT_TX] = { collection_uid: g.collectionUid, contract: g.contract, items, rounds };
        const row = await ctx.db.transaction().execute(async (tx) => {
          const rec = await sender.record(tx, {
            kind: ITEM_MINT_TX,
            ref: g.collectionUid,
            payload,
            to: g.contract as Address,
            data,
            gas: itemMintGas(items.length),
          });
          await tx
            .updateTable('item_mints')
            .set({ tx_id: rec.id, updated_at: nowIso() })
            .where(
              'uid',
              'in',
              items.map((i) => i.uid),
            )
            .execute();
          await ctx.queue.completeMany(
            tx,
            g.jobs.map((j) => j.id),
          );
          return rec;
        });
        await sender.broadcast([row]);
      }
    },
    // The job kept failing before any transaction was recorded: fail the mint rather than leave it pending.
    async onDead(job, error) {
      await ctx.db.transaction().execute(async (tx) => {
        const m = await tx.selectFrom('item_mints').selectAll().where('uid', '=', job.ref).executeTakeFirst();
        if (m?.status === 'pending' && m.tx_id === null) await failMint(tx, m, `not sent to the chain: ${error}`);
      });
    },
  };
}

type MintToSend = Awaited<ReturnType<typeof mintsToSend>>[number];

/** The mints of a batch of jobs, with their item's token and their collection's contract. */
function mintsToSend(ctx: ChainCtx, uids: string[]) {
  return ctx.db
    .selectFrom('item_mints')
    .innerJoin('items', 'items.uid', 'item_mints.item_uid')
    .innerJoin('collections', 'collections.uid', 'items.collection_uid')
    .select([
      'item_mints.uid',
      'item_mints.status',
      'item_mints.tx_id',
      'item_mints.to_address',
      'item_mints.amount',
      'item_mints.seq',
      'items.token_id',
      'items.max_supply',
      'items.collection_uid',
      'collections.status as collection_status',
      'collections.contract_address',
    ])
    .where('item_mints.uid', 'in', uids)
    .execute();
}

/**
 * Applies a mintBatch. A mint is done when its number is used on chain (read at the receipt's block, or
 * the latest without one): its item's minted supply grows, its holder's balance is read again, and
 * `item.minted` goes out. Otherwise it is sent again, alone when it was batched; after
 * MAX_ITEM_MINT_ROUNDS it fails and gives its amount back to the max supply.
 * Long: each outcome of a batch transaction (minted, sent again, failed) is decided from one receipt.
 */
export function itemMintOutcome(ctx: ChainCtx): OutcomeHandler<typeof ITEM_MINT_TX> {
  const { abi } = artifact('MintworksItems');
  const client = ctx.sender.client;
  return async ({ row, payload: p, receipt, reason }) => {
    const block = receipt?.blockNumber ?? (await client.getBlockNumber({ cacheTime: 0 }));
    const used = (await client.readContract({
      address: p.contract as Address,
      abi,
      functionName: 'mintsUsed',
      args: [p.items.map((i) => BigInt(i.seq))],
      blockNumber: block,
    })) as boolean[];
    const onChain = new Set(p.items.filter((_, k) => used[k]).map((i) => i.uid));
    const mints =
      onChain.size === 0
        ? []
        : await ctx.db
            .selectFrom('item_mints')
            .innerJoin('items', 'items.uid', 'item_mints.item_uid')
            .select(['item_mints.item_uid', 'item_mints.to_user_uid as user_uid', 'item_mints.to_address as address', 'items.token_id'])
            .where('item_mints.uid', 'in', [...onChain])
            .execute();
    const holdings: Holding[] = mints.map((m) => ({ item_uid: m.item_uid, user_uid: m.user_uid, address: m.address, token_id: Number(m.token_id) }));
    const held = await readHeld(client, p.contract, holdings, block);
    return async (tx) => {
      let retried = false;
      // First, before the balances: every other writer of these rows locks an item alone.
      const items = await lockedItems(
        tx,
        mints.map((m) => m.item_uid),
      );
      for (const [k, h] of holdings.entries()) await writeHeld(tx, h, held[k], block);
      const rows = await tx
        .selectFrom('item_mints')
        .selectAll()
        .where(
          'uid',
          'in',
          p.items.map((i) => i.uid),
        )
        .execute();
      for (const m of rows) {
        if (m.status !== 'pending') continue; // idempotent: re-applied after a rewind
        const t = nowIso();
        if (onChain.has(m.uid)) {
          await tx.updateTable('item_mints').set({ status: 'done', tx_id: row.id, error: null, updated_at: t }).where('uid', '=', m.uid).execute();
          const item = items.get(m.item_uid);
          if (!item) throw new Error(`item ${m.item_uid} of mint ${m.uid} is not in the database`);
          const minted = (amountFromDb(item.minted_supply) + amountFromDb(m.amount)).toString();
          await tx.updateTable('items').set({ minted_supply: minted, updated_at: t }).where('uid', '=', item.uid).execute();
          items.set(item.uid, { ...item, minted_supply: minted });
          await emitEvent(tx, m.app_uid, 'item.minted', {
            item: itemView({ ...item, minted_supply: minted }, ctx.installation),
            mint: itemMintView({ ...m, status: 'done' }),
          });
          continue;
        }
        if (m.tx_id !== row.id) continue; // a newer transaction carries it now
        const round = (p.rounds[m.uid] ?? 1) + 1;
        if (round > MAX_ITEM_MINT_ROUNDS) {
          await failMint(tx, m, `mint failed ${MAX_ITEM_MINT_ROUNDS} times: ${reason ?? 'not on chain'}`);
          continue;
        }
        await tx.updateTable('item_mints').set({ tx_id: null, updated_at: t }).where('uid', '=', m.uid).execute();
        await ctx.queue.enqueue(tx, { kind: ITEM_MINT_JOB, ref: m.uid, groupKey: p.collection_uid, payload: { round, solo: p.items.length > 1 } });
        retried = true;
      }
      if (retried)
        return () => {
          ctx.log.warn({ tx: row.id, collection: p.collection_uid, reason: reason ?? 'not on chain' }, 'item mint not confirmed on chain, minting again');
          ctx.queue.notify(ITEM_MINT_JOB);
        };
    };
  };
}

/** Marks a mint failed: it never reached the chain, so its amount goes back under the max supply. */
async function failMint(tx: Tx, m: ItemMintRow, reason: string): Promise<void> {
  await tx.updateTable('item_mints').set({ status: 'failed', error: reason, tx_id: null, updated_at: nowIso() }).where('uid', '=', m.uid).execute();
  // Locked: a mint accepted meanwhile adds to it under the same lock (services/items/mints.ts).
  const item = await lockForUpdate(tx.selectFrom('items').select('accepted_supply').where('uid', '=', m.item_uid)).executeTakeFirstOrThrow();
  const accepted = amountFromDb(item.accepted_supply) - amountFromDb(m.amount);
  await tx
    .updateTable('items')
    .set({ accepted_supply: (accepted > 0n ? accepted : 0n).toString() })
    .where('uid', '=', m.item_uid)
    .execute();
}

/**
 * The items whose minted supply the outcome adds to, locked until its transaction ends, in the order of
 * their uids. Read unlocked, two outcomes of one item applied at once on PostgreSQL (the tracker
 * follows transactions concurrently) each added its own amount to the same old supply, and one was lost.
 */
async function lockedItems(tx: Tx, uids: string[]): Promise<Map<string, ItemRow>> {
  if (uids.length === 0) return new Map();
  const rows = await lockForUpdate(
    tx
      .selectFrom('items')
      .selectAll()
      .where('uid', 'in', [...new Set(uids)])
      .orderBy('uid'),
  ).execute();
  return new Map(rows.map((i) => [i.uid, i]));
}
