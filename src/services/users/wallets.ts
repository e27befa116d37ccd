// Custodial wallets are created lazily, per chain: at a user's first on-chain action on a chain (a
// mint, an allocation, a deposit request), as a job; mints that were waiting for the wallet are woken
// when it exists. The address is the user's derived key, the same on every EVM chain; the wallet row
// and its `user.wallet_created` event are per chain.
import type { Ctx } from '../context.js';
import type { DbOrTx } from '../../store/db.js';
import type { JobHandler } from '../../jobs/worker.js';
import { emitEvents } from '../events.js';
import { groupBy } from '../../util/group-by.js';
import { userView, chainOf } from '../views.js';
import { nowIso } from '../../util/time.js';
import { ApiError } from '../../util/errors.js';
import { requireUserRow, walletsOf } from './users.js';
import { sql } from 'kysely';
import { lockForTransaction } from '../../store/locks.js';
import { chainKind, MINT_JOB, WALLET_JOB } from '../../jobs/kinds.js';
import { queueOn, type EnqueueOptions } from '../../jobs/queue.js';
import { chainForNew } from '../requests/chain-choice.js';

const homeOf = (ctx: Ctx) => ctx.installation.homeChainId;

/** The wallet job's ref: the user uid, with `@<chain id>` off the home chain (one open job per user and chain). */
const walletRef = (ctx: Ctx, userUid: string, chainId: number) => chainKind(userUid, chainId, homeOf(ctx));

function parseWalletRef(ctx: Ctx, ref: string): { userUid: string; chainId: number } {
  const at = ref.indexOf('@');
  return at < 0 ? { userUid: ref, chainId: homeOf(ctx) } : { userUid: ref.slice(0, at), chainId: Number(ref.slice(at + 1)) };
}

/** A user's wallet wanted on a chain. */
export interface WalletWanted {
  userUid: string;
  chainId: number;
}

/** Which of the wallets asked for are to be queued, and which exist already. */
export interface WalletNeeds {
  /** No wallet yet and no open job to make it: a job is queued (or to be) for each. */
  queue: WalletWanted[];
  /** Made since the caller last looked (its job finished meanwhile): nothing to wait for. */
  made: WalletWanted[];
}

/**
 * Queues wallet creation for users who have none on a chain yet (idempotent: one open job per user and
 * chain); answers which it queued a job for and which turned out to exist. For a caller that waits for
 * the wallets in `tx` (mints deferred until their wallets' jobs wake them): no wallet job finishes
 * before `tx` ends, and one that finished before it began is read as finished.
 */
export async function requestWallets(ctx: Ctx, tx: DbOrTx, wanted: WalletWanted[]): Promise<WalletNeeds> {
  // Never beside a transaction that makes wallets and wakes their mints (store/locks.ts): a wallet job
  // that finished between a mint's look and its deferral had woken it while it was still claimed, and
  // the mint then waited out its whole delay (5 s at the end of an airdrop on PostgreSQL, where the two
  // run side by side). Wallet jobs still run side by side with each other (they take it shared).
  await lockForTransaction(tx, 'walletsMade', 'exclusive');
  const needs = await walletsToQueue(ctx, tx, wanted);
  await ctx.queue.enqueueMany(tx, walletJobs(ctx, needs.queue));
  return needs;
}

/**
 * Of these users and chains, those with no open wallet job and no wallet: one query for all of them
 * (an airdrop's group of creates asks for a wallet for each of its users; a query and an insert each
 * had been two round trips per create on PostgreSQL, inside the group's transaction). Each pair once.
 *
 * The caller saw no wallet, but its look may be older than this transaction's (a mint job reads its
 * assets before it opens one; on PostgreSQL each statement sees the latest commits): a wallet job that
 * finished since then made the wallet. Those with a finished job are looked up in the wallets, so a
 * wallet is not queued twice; those with no job at all are not (the common case of an airdrop, and a
 * second job for a wallet made without one finds it made and does nothing).
 */
export async function walletsToQueue(ctx: Ctx, tx: DbOrTx, wanted: WalletWanted[]): Promise<WalletNeeds> {
  const byRef = new Map(wanted.map((w) => [walletRef(ctx, w.userUid, w.chainId), w]));
  const refs = [...byRef.keys()];
  const finished = new Set<string>(); // refs with a finished wallet job
  for (let i = 0; i < refs.length; i += 500) {
    // The kind as a literal: only then can the planners use the partial index on wallet jobs' ref. The
    // status is read, not asked for: with it in the query, PostgreSQL read every open wallet job
    // through the claim index (kind, status) whenever its statistics lagged behind a burst of them (2
    // ms a query at 20,000 against 0.04 through this index); a user and chain has few jobs in all.
    const jobs = await tx
      .selectFrom('jobs')
      .select(['ref', 'status'])
      .where('kind', '=', sql.lit(WALLET_JOB))
      .where('ref', 'in', refs.slice(i, i + 500))
      .execute();
    for (const j of jobs) {
      if (j.status === 'queued' || j.status === 'running') byRef.delete(j.ref);
      else finished.add(j.ref);
    }
  }
  const made: WalletWanted[] = [];
  const maybeMade = [...finished].filter((ref) => byRef.has(ref)).map((ref) => byRef.get(ref)!);
  for (let i = 0; i < maybeMade.length; i += 500) {
    const some = maybeMade.slice(i, i + 500);
    const exist = await tx
      .selectFrom('wallets')
      .select(['user_uid', 'chain_id'])
      .where(
        'user_uid',
        'in',
        some.map((w) => w.userUid),
      )
      .execute();
    const existing = new Set(exist.map((w) => walletRef(ctx, w.user_uid, Number(w.chain_id))));
    for (const w of some) {
      const ref = walletRef(ctx, w.userUid, w.chainId);
      if (!existing.has(ref)) continue;
      byRef.delete(ref);
      made.push(w);
    }
  }
  return { queue: [...byRef.values()], made };
}

/** The jobs that create these wallets, to enqueue (or insert with other rows: JobQueue.rowsOf). */
export function walletJobs(ctx: Ctx, wanted: WalletWanted[]): EnqueueOptions<typeof WALLET_JOB>[] {
  return wanted.map((w) => ({ kind: WALLET_JOB, ref: walletRef(ctx, w.userUid, w.chainId) }));
}

/** Creates the user's wallet on `chainId` if it does not exist yet, with its event. Returns the address. */
export async function createWalletNow(ctx: Ctx, tx: DbOrTx, userUid: string, chainId: number): Promise<string> {
  await createWalletsNow(ctx, tx, [{ userUid, chainId }]);
  return ctx.keys.userAddress(userUid);
}

/**
 * createWalletNow for many users and chains, with a statement per table (an airdrop's wallet jobs come
 * by the hundred): the wallets that did not exist yet, their users' addresses and their events.
 */
async function createWalletsNow(ctx: Ctx, tx: DbOrTx, asked: WalletWanted[]): Promise<void> {
  // Each user and chain once (two processes may each have queued a job for the same wallet).
  const wanted = [...new Map(asked.map((w) => [`${w.userUid}@${w.chainId}`, w])).values()];
  if (wanted.length === 0) return;
  const t = nowIso();
  const addressOf = new Map(wanted.map((w) => [w.userUid, ctx.keys.userAddress(w.userUid)]));
  const created: { user_uid: string }[] = [];
  for (let i = 0; i < wanted.length; i += 200) {
    created.push(
      ...(await tx
        .insertInto('wallets')
        .values(wanted.slice(i, i + 200).map((w) => ({ user_uid: w.userUid, chain_id: w.chainId, address: addressOf.get(w.userUid)!, created_at: t })))
        .onConflict((oc) => oc.columns(['user_uid', 'chain_id']).doNothing())
        .returning('user_uid')
        .execute()),
    );
  }
  const users = [...new Set(created.map((c) => c.user_uid))];
  if (users.length === 0) return;
  // The user's address, for lookups by address (the same key on every chain).
  await tx
    .updateTable('users')
    .set({
      wallet_address: sql<string>`case uid ${sql.join(
        users.map((u) => sql`when ${u} then ${addressOf.get(u)!}`),
        sql` `,
      )} end`,
      wallet_created_at: t,
    })
    .where('uid', 'in', users)
    .where('wallet_address', 'is', null)
    .execute();
  const userRows = new Map((await tx.selectFrom('users').selectAll().where('uid', 'in', users).execute()).map((u) => [u.uid, u]));
  const wallets = groupBy(await walletsOf(tx, users), (w) => w.user_uid);
  // An event per wallet created, as the user is now.
  const byApp = groupBy(
    created.map((c) => userRows.get(c.user_uid)!),
    (u) => u.app_uid,
  );
  for (const [appUid, ofApp] of byApp)
    await emitEvents(
      tx,
      appUid,
      'user.wallet_created',
      ofApp.map((u) => ({ user: userView(u, wallets.get(u.uid) ?? [], ctx.installation) })),
    );
}

/** Whether the user has a wallet on the chain. */
export async function hasWallet(db: DbOrTx, userUid: string, chainId: number): Promise<boolean> {
  return !!(await db.selectFrom('wallets').select('address').where('user_uid', '=', userUid).where('chain_id', '=', chainId).executeTakeFirst());
}

/** Wallet creation: chain-independent (a derivation and a row), so one handler serves every chain. */
export function walletJobHandler(ctx: Ctx): JobHandler<typeof WALLET_JOB> {
  return {
    kind: WALLET_JOB,
    batchSize: 200,
    leaseMs: 10_000,
    pollMs: 500,
    async handle(jobs) {
      // The claim's wallets in one transaction: a transaction per wallet had been seven statements and
      // a commit each, and an airdrop to new users asks for one wallet per asset.
      const wanted = jobs.map((job) => parseWalletRef(ctx, job.ref));
      const usersOn = groupBy(wanted, (w) => w.chainId);
      await ctx.db.transaction().execute(async (tx) => {
        // Not beside a transaction deferring mints for wallets (requestWallets): its mints are either
        // deferred already, and woken here, or read these jobs finished.
        await lockForTransaction(tx, 'walletsMade', 'shared');
        await createWalletsNow(ctx, tx, wanted);
        for (const [chainId, ws] of usersOn)
          await queueOn(ctx, chainId).wakeGroups(
            tx,
            MINT_JOB,
            ws.map((w) => w.userUid),
          );
        await ctx.queue.completeMany(
          tx,
          jobs.map((j) => j.id),
        );
      });
      for (const chainId of usersOn.keys()) queueOn(ctx, chainId).notify(MINT_JOB);
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
    ? ctx.keys.userAddress(u.uid)
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
