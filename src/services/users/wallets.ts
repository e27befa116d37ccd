// Custodial wallets are created lazily, per chain: at a user's first on-chain action on a chain (a
// mint, an allocation, a deposit request), as a job; mints that were waiting for the wallet are woken
// when it exists. The address is the user's derived key, the same on every EVM chain; the wallet row
// and its `user.wallet_created` event are per chain.
import type { Ctx } from '../context.js';
import type { DbOrTx } from '../../store/db.js';
import type { JobHandler } from '../../jobs/worker.js';
import { emitEvent } from '../events.js';
import { userView, chainOf } from '../views.js';
import { nowIso } from '../../util/time.js';
import { ApiError } from '../../util/errors.js';
import { requireUserRow, walletsOf } from './users.js';
import { sql } from 'kysely';
import { chainKind, MINT_JOB, WALLET_JOB } from '../../jobs/kinds.js';
import { queueOn } from '../../jobs/queue.js';
import { chainForNew } from '../requests/chain-choice.js';

const homeOf = (ctx: Ctx) => ctx.installation.homeChainId;

/** The wallet job's ref: the user uid, with `@<chain id>` off the home chain (one open job per user and chain). */
const walletRef = (ctx: Ctx, userUid: string, chainId: number) => chainKind(userUid, chainId, homeOf(ctx));

function parseWalletRef(ctx: Ctx, ref: string): { userUid: string; chainId: number } {
  const at = ref.indexOf('@');
  return at < 0 ? { userUid: ref, chainId: homeOf(ctx) } : { userUid: ref.slice(0, at), chainId: Number(ref.slice(at + 1)) };
}

/** Queues wallet creation for a user who has none on `chainId` yet (idempotent: one open job per user and chain). */
export async function requestWallet(ctx: Ctx, tx: DbOrTx, userUid: string, chainId: number): Promise<boolean> {
  const ref = walletRef(ctx, userUid, chainId);
  // The kind as a literal: only then can the planners use the partial index on wallet jobs' ref.
  const open = await tx
    .selectFrom('jobs')
    .select('id')
    .where('kind', '=', sql.lit(WALLET_JOB))
    .where('ref', '=', ref)
    .where('status', 'in', ['queued', 'running'])
    .executeTakeFirst();
  if (open) return false;
  await ctx.queue.enqueue(tx, { kind: WALLET_JOB, ref });
  return true;
}

/** Creates the user's wallet on `chainId` if it does not exist yet, with its event. Returns the address. */
export async function createWalletNow(ctx: Ctx, tx: DbOrTx, userUid: string, chainId: number): Promise<string> {
  const address = ctx.keys.user(userUid).address.toLowerCase();
  const t = nowIso();
  const inserted = await tx
    .insertInto('wallets')
    .values({ user_uid: userUid, chain_id: chainId, address, created_at: t })
    .onConflict((oc) => oc.columns(['user_uid', 'chain_id']).doNothing())
    .executeTakeFirst();
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0) {
    // The user's address, for lookups by address (the same key on every chain).
    await tx
      .updateTable('users')
      .set({ wallet_address: address, wallet_created_at: t })
      .where('uid', '=', userUid)
      .where('wallet_address', 'is', null)
      .execute();
    const u = await tx.selectFrom('users').selectAll().where('uid', '=', userUid).executeTakeFirstOrThrow();
    await emitEvent(tx, u.app_uid, 'user.wallet_created', { user: userView(u, await walletsOf(tx, [userUid]), ctx.installation) });
  }
  return address;
}

/** Whether the user has a wallet on the chain. */
export async function hasWallet(db: DbOrTx, userUid: string, chainId: number): Promise<boolean> {
  return !!(await db.selectFrom('wallets').select('address').where('user_uid', '=', userUid).where('chain_id', '=', chainId).executeTakeFirst());
}

/** Wallet creation: chain-independent (a derivation and a row), so one handler serves every chain. */
export function walletJobHandler(ctx: Ctx): JobHandler<typeof WALLET_JOB> {
  return {
    kind: WALLET_JOB,
    batchSize: 50,
    leaseMs: 10_000,
    pollMs: 500,
    async handle(jobs) {
      const woken = new Set<number>();
      for (const job of jobs) {
        const { userUid, chainId } = parseWalletRef(ctx, job.ref);
        await ctx.db.transaction().execute(async (tx) => {
          await createWalletNow(ctx, tx, userUid, chainId);
          await queueOn(ctx, chainId).wakeGroup(tx, MINT_JOB, userUid);
          await ctx.queue.complete(tx, job.id);
        });
        woken.add(chainId);
      }
      for (const chainId of woken) queueOn(ctx, chainId).notify(MINT_JOB);
    },
  };
}

/**
 * GET /deposit: ERC-681 deposit data on the collection's chain. Asking for it creates the wallet
 * there; since a wallet is a pure derivation, it is created right in the request, so the caller gets
 * an address at once.
 */
/** The deposit address of a user on a collection's chain, or (`collectionUid` null) on the default chain. */
export async function depositInfo(ctx: Ctx, appUid: string, userUid: string, collectionUid: string | null) {
  const u = await requireUserRow(ctx, appUid, userUid);
  let chainId = chainForNew(ctx, null);
  if (collectionUid !== null) {
    const c = await ctx.db
      .selectFrom('collections')
      .select(['uid', 'chain_id'])
      .where('uid', '=', collectionUid)
      .where('app_uid', '=', appUid)
      .executeTakeFirst();
    if (!c) throw ApiError.notFound('Collection');
    chainId = Number(c.chain_id);
  }
  const address = (await hasWallet(ctx.db, u.uid, chainId))
    ? ctx.keys.user(u.uid).address.toLowerCase()
    : await ctx.db.transaction().execute((tx) => createWalletNow(ctx, tx, u.uid, chainId));
  const wallet = address.toLowerCase();
  const n = chainOf(ctx.installation, chainId);
  return {
    network: n.network,
    chain_id: n.chain_id,
    wallet_address: wallet,
    qr_code_data: `ethereum:${wallet}@${n.chain_id}`,
  };
}
