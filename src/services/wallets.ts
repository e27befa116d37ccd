// Custodial wallets are created lazily, at a user's first mint or deposit request, as a job; mints that
// were waiting for the wallet are woken when it exists.
import type { Ctx } from './context.js';
import type { DbOrTx } from '../store/db.js';
import type { JobHandler } from '../jobs/worker.js';
import { emitEvent } from './events.js';
import { userView } from './views.js';
import { nowIso } from '../util/time.js';
import { ApiError } from '../util/errors.js';
import { requireUserRow } from './users.js';
import { sql } from 'kysely';
import { network } from './views.js';

export const WALLET_JOB = 'wallet.create';

/** Queues wallet creation for a user who has none yet (idempotent: one open job per user). */
export async function requestWallet(ctx: Ctx, tx: DbOrTx, userUid: string): Promise<boolean> {
  // The kind as a literal: only then can the planners use the partial index on wallet jobs' ref.
  const open = await tx.selectFrom('jobs').select('id').where('kind', '=', sql.lit(WALLET_JOB)).where('ref', '=', userUid).where('status', 'in', ['queued', 'running']).executeTakeFirst();
  if (open) return false;
  await ctx.queue.enqueue(tx, { kind: WALLET_JOB, ref: userUid });
  return true;
}

/** Creates the user's wallet if it does not exist yet, with its event. Returns the address. */
export async function createWalletNow(ctx: Ctx, tx: DbOrTx, userUid: string): Promise<string> {
  const address = ctx.keys.user(userUid).address.toLowerCase();
  const r = await tx.updateTable('users').set({ wallet_address: address, wallet_created_at: nowIso() }).where('uid', '=', userUid).where('wallet_address', 'is', null).executeTakeFirst();
  if (Number(r.numUpdatedRows) > 0) {
    const u = await tx.selectFrom('users').selectAll().where('uid', '=', userUid).executeTakeFirstOrThrow();
    await emitEvent(tx, u.app_uid, 'user.wallet_created', { user: userView(u, ctx.config) });
  }
  return address;
}

export function walletJobHandler(ctx: Ctx, wakeKind: string): JobHandler {
  return {
    kind: WALLET_JOB,
    batchSize: 50,
    leaseMs: 10_000,
    pollMs: 500,
    async handle(jobs) {
      for (const job of jobs) {
        await ctx.db.transaction().execute(async (tx) => {
          await createWalletNow(ctx, tx, job.ref);
          await ctx.queue.wakeGroup(tx, wakeKind, job.ref);
          await ctx.queue.complete(tx, job.id);
        });
      }
      ctx.queue.notify(wakeKind);
    },
  };
}

/**
 * GET /deposit: ERC-681 deposit data. Asking for it creates the wallet; since a wallet is
 * a pure derivation, it is created right in the request, so the caller gets an address at once.
 */
export async function depositInfo(ctx: Ctx, appUid: string, userUid: string, collectionUid: string) {
  const u = await requireUserRow(ctx, appUid, userUid);
  const c = await ctx.db.selectFrom('collections').select('uid').where('uid', '=', collectionUid).where('app_uid', '=', appUid).executeTakeFirst();
  if (!c) throw ApiError.notFound('Collection');
  const address = u.wallet_address ?? (await ctx.db.transaction().execute((tx) => createWalletNow(ctx, tx, u.uid)));
  const wallet = address.toLowerCase();
  const n = network(ctx.config);
  return {
    network: n.network,
    chain_id: n.chain_id,
    wallet_address: wallet,
    qr_code_data: `ethereum:${wallet}@${n.chain_id}`,
  };
}
