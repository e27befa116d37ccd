// Setting a record to what the chain shows (`chain verify --fix`): one database transaction per
// divergence, guarded by the value the verifier read (UPDATE … WHERE the row still holds it), so a fix
// never undoes what a worker wrote meanwhile; the events the services would have emitted (the same
// helpers, so their payloads are the API's), and an audit entry with both sides.
import type { Ctx } from '../context.js';
import type { Tx } from '../../store/db.js';
import { nowIso } from '../../util/time.js';
import { unitsFromDb, unitsToDb } from '../../domain/amounts.js';
import { emitEvent } from '../events.js';
import { getAsset } from '../assets/reads.js';
import { burnView } from '../assets/lifecycle/burn.js';
import { transferView } from '../assets/lifecycle/transfer.js';
import { claimView } from '../rewards/views.js';
import { lockLedger, writeLedger } from '../rewards/shared.js';
import { recordAudit, type Actor } from '../audit.js';
import { report, type FixPlan, type Found } from './divergences.js';

/** fixed; changed: the row no longer held what was read (a worker got there first: verify again); not_fixable. */
export type FixResult = 'fixed' | 'changed' | 'not_fixable';

/** The reasons a burn or transfer set back to cancelled keeps (GET /transfer shows it). */
export const NOT_BURNED_REASON = 'the burn was not executed on chain (found by chain verify)';
export const NOT_EXECUTED_REASON = 'the transfer was not executed on chain (found by chain verify)';

const changed = (r: { numUpdatedRows: bigint }) => Number(r.numUpdatedRows) > 0;

/** The App user whose wallet is `address`, if any. */
async function userOf(tx: Tx, appUid: string, address: string): Promise<string | null> {
  const u = await tx.selectFrom('users').select('uid').where('app_uid', '=', appUid).where('wallet_address', '=', address.toLowerCase()).executeTakeFirst();
  return u?.uid ?? null;
}

type Apply<P extends FixPlan['do']> = (ctx: Ctx, tx: Tx, appUid: string, plan: Extract<FixPlan, { do: P }>) => Promise<boolean>;

const assetOwner: Apply<'asset_owner'> = async (ctx, tx, appUid, p) => {
  const q = tx
    .updateTable('assets')
    .set({ owner_address: p.to, owner_user_uid: await userOf(tx, appUid, p.to), updated_at: nowIso() })
    .where('uid', '=', p.asset_uid)
    .where('is_burned', '=', 0);
  const r = await (p.from === null ? q.where('owner_address', 'is', null) : q.where('owner_address', '=', p.from)).executeTakeFirst();
  if (!changed(r)) return false;
  await emitEvent(tx, appUid, 'asset.transferred', { asset: await getAsset(ctx, appUid, p.asset_uid, tx) });
  return true;
};

const assetBurned: Apply<'asset_burned'> = async (ctx, tx, appUid, p) => {
  const t = nowIso();
  const r = await tx
    .updateTable('assets')
    .set({ is_burned: 1, is_burning: 0, updated_at: t })
    .where('uid', '=', p.asset_uid)
    .where('is_burned', '=', 0)
    .executeTakeFirst();
  if (!changed(r)) return false;
  let burn = null;
  if (p.burn_uid && p.burn_status)
    burn = await tx
      .updateTable('burns')
      .set({ status: 'done', reason: null, updated_at: t })
      .where('uid', '=', p.burn_uid)
      .where('status', '=', p.burn_status)
      .returningAll()
      .executeTakeFirst();
  const asset = await getAsset(ctx, appUid, p.asset_uid, tx);
  await emitEvent(tx, appUid, 'asset.burned', burn ? { asset, burn: burnView(burn) } : { asset });
  return true;
};

const assetUnburned: Apply<'asset_unburned'> = async (_ctx, tx, appUid, p) => {
  const t = nowIso();
  const r = await tx
    .updateTable('assets')
    .set({ is_burned: 0, is_burning: 0, owner_address: p.owner, owner_user_uid: await userOf(tx, appUid, p.owner), updated_at: t })
    .where('uid', '=', p.asset_uid)
    .where('is_burned', '=', 1)
    .executeTakeFirst();
  if (!changed(r)) return false;
  if (p.burn_uid)
    await tx
      .updateTable('burns')
      .set({ status: 'cancelled', reason: NOT_BURNED_REASON, updated_at: t })
      .where('uid', '=', p.burn_uid)
      .where('status', '=', 'done')
      .execute();
  return true;
};

const transferDone: Apply<'transfer_done'> = async (ctx, tx, appUid, p) => {
  const t = nowIso();
  const tr = await tx
    .updateTable('transfers')
    .set({ status: 'done', reason: null, updated_at: t })
    .where('uid', '=', p.transfer_uid)
    .where('status', '=', p.status_was)
    .returningAll()
    .executeTakeFirst();
  if (!tr) return false;
  await tx
    .updateTable('assets')
    .set({ is_transferring: 0, owner_address: tr.to_address, owner_user_uid: await userOf(tx, appUid, tr.to_address), updated_at: t })
    .where('uid', '=', p.asset_uid)
    .execute();
  await emitEvent(tx, appUid, 'asset.transferred', { asset: await getAsset(ctx, appUid, p.asset_uid, tx), transfer: transferView(tr) });
  return true;
};

const transferCancelled: Apply<'transfer_cancelled'> = async (ctx, tx, appUid, p) => {
  const t = nowIso();
  const r = await tx
    .updateTable('transfers')
    .set({ status: 'cancelled', reason: NOT_EXECUTED_REASON, updated_at: t })
    .where('uid', '=', p.transfer_uid)
    .where('status', '=', 'done')
    .executeTakeFirst();
  if (!changed(r)) return false;
  const q = tx
    .updateTable('assets')
    .set({ is_transferring: 0, owner_address: p.owner, owner_user_uid: await userOf(tx, appUid, p.owner), updated_at: t })
    .where('uid', '=', p.asset_uid);
  await (p.owner_was === null ? q.where('owner_address', 'is', null) : q.where('owner_address', '=', p.owner_was)).execute();
  await emitEvent(tx, appUid, 'asset.transferred', { asset: await getAsset(ctx, appUid, p.asset_uid, tx) });
  return true;
};

const tokenUri: Apply<'token_uri'> = async (_ctx, tx, _appUid, p) => {
  const q = tx.updateTable('assets').set({ token_uri: p.to, updated_at: nowIso() }).where('uid', '=', p.asset_uid).where('is_editing', '=', 0);
  return changed(await (p.from === null ? q.where('token_uri', 'is', null) : q.where('token_uri', '=', p.from)).executeTakeFirst());
};

const claimPaid: Apply<'claim'> = async (ctx, tx, appUid, p) => {
  const before = await tx.selectFrom('claims').select(['reward_uid', 'from_user_uid']).where('uid', '=', p.claim_uid).executeTakeFirst();
  if (!before) return false;
  // The ledger row first (the lock order of the claim job), then the claim.
  const ledger = await lockLedger(ctx, tx, before.reward_uid, before.from_user_uid, false);
  const q = tx
    .updateTable('claims')
    .set({ status: 'done', amount: p.paid, error: null, updated_at: nowIso() })
    .where('uid', '=', p.claim_uid)
    .where('status', '=', p.status_was);
  const c = await (p.amount_was === null ? q.where('amount', 'is', null) : q.where('amount', '=', p.amount_was)).returningAll().executeTakeFirst();
  if (!c) return false;
  if (ledger) {
    // `claimed` is the sum of what done claims paid: computed again, whatever set it wrong.
    const paid = await tx
      .selectFrom('claims')
      .select('amount')
      .where('reward_uid', '=', c.reward_uid)
      .where('from_user_uid', '=', c.from_user_uid)
      .where('status', '=', 'done')
      .execute();
    ledger.claimed = paid.reduce((s, x) => s + unitsFromDb(x.amount), 0n);
    if (ledger.claimUid === c.uid) ledger.claimUid = null;
    await writeLedger(tx, c.reward_uid, c.from_user_uid, ledger);
  }
  await emitEvent(tx, appUid, 'reward.claimed', { claim: claimView({ ...c, amount: unitsToDb(unitsFromDb(c.amount)) }) });
  return true;
};

// Item supplies and balances are the chain's figures the service keeps: the fix writes them, guarded
// by the figure read. No event: what moved the figure (a mint, a deposit) announced itself, or is not the
// service's to announce.
const itemSupply: Apply<'item_supply'> = async (_ctx, tx, _appUid, p) =>
  changed(
    await tx
      .updateTable('items')
      .set({ minted_supply: p.to, updated_at: nowIso() })
      .where('uid', '=', p.item_uid)
      .where('minted_supply', '=', p.from)
      .executeTakeFirst(),
  );

const itemBalance: Apply<'item_balance'> = async (_ctx, tx, _appUid, p) =>
  changed(
    await tx
      .updateTable('item_balances')
      .set({ amount: p.to, updated_at: nowIso() })
      .where('item_uid', '=', p.item_uid)
      .where('user_uid', '=', p.user_uid)
      .where('amount', '=', p.from)
      .executeTakeFirst(),
  );

const APPLY: { [K in FixPlan['do']]: Apply<K> } = {
  asset_owner: assetOwner,
  asset_burned: assetBurned,
  asset_unburned: assetUnburned,
  transfer_done: transferDone,
  transfer_cancelled: transferCancelled,
  token_uri: tokenUri,
  claim: claimPaid,
  item_supply: itemSupply,
  item_balance: itemBalance,
};

/** Applies a divergence's fix in one transaction with its events and audit entry. */
export async function applyFix(ctx: Ctx, chainId: number, f: Found, actor: Actor): Promise<FixResult> {
  const plan = f.plan;
  if (!plan) return 'not_fixable';
  const done = await ctx.db.transaction().execute(async (tx) => {
    const ok = await (APPLY[plan.do] as Apply<typeof plan.do>)(ctx, tx, f.app_uid, plan as never);
    if (!ok) return false;
    const d = report(f);
    await recordAudit(tx, actor, {
      action: 'chain.divergence_fixed',
      app_uid: d.app_uid,
      chain_id: chainId,
      details: { kind: d.kind, record: d.record, field: d.field, recorded: d.recorded, on_chain: d.on_chain },
    });
    return true;
  });
  if (done)
    ctx.log.warn(
      { chain: chainId, kind: f.kind, record: f.record, recorded: f.recorded, onChain: f.on_chain },
      'chain verify: record set to what the chain shows',
    );
  return done ? 'fixed' : 'changed';
}
