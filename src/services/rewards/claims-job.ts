// Claims on chain: the user's own forwarded claim(to, ref), relayed; the amount is what the contract paid.
import { encodeFunctionData, getAddress, parseAbiItem, parseEventLogs, type Address, type Hex } from 'viem';

const CLAIMED_EVENT = parseAbiItem('event Claimed(address indexed user, address indexed to, uint256 amount, bytes32 indexed ref)');
import type { ChainCtx, Ctx } from '../context.js';
import type { JobHandler } from '../../jobs/worker.js';
import { CLAIM_JOB } from '../../jobs/kinds.js';
import type { Tx } from '../../store/db.js';
import { artifact } from '../../chain/artifacts.js';
import type { ChainTxRow } from '../../chain/sender.js';
import { CLAIM_TX, REWARD_DEPLOY_TX, type OutcomeHandler, type OutcomePayloads } from '../../chain/outcomes.js';
import {
  allocateForwarderNonce,
  encodeForwardBatch,
  forwardBatchGas,
  forwardResults,
  forwarderNonceAt,
  resyncForwarderNonce,
  signForwardRequest,
} from '../../chain/forward.js';
import { nowIso } from '../../util/time.js';
import { unitsToDb } from '../../domain/amounts.js';
import { chainRef, claimableOf, claimOutcomeStep, nextClaimStep } from '../../domain/rewards.js';
import { emitEvent } from '../events.js';
import { claimView, type ClaimRow } from './views.js';
import { MAX_CLAIM_ROUNDS, CLAIM_GAS, FORWARD_TTL_S, lockLedger, writeLedger, claimGroup, type LedgerRow } from './shared.js';
import type { Selectable } from 'kysely';
import type { RewardTable } from '../../store/schema.js';

// ------------------------------------------------------------------------------------ claim job

/**
 * Executes claims one at a time per (reward, user): takes the ledger row's lock and claim slot,
 * decides from the facts (domain/rewards.ts nextClaimStep) and either completes a zero claim at once,
 * waits, or signs the user's forwarded claim(to, ref) and hands it to the user's relayer.
 * Long: each claim's steps (lock, decide, sign) share the job's ledger row.
 */
export function claimJobHandler(ctx: ChainCtx): JobHandler<typeof CLAIM_JOB> {
  const sender = ctx.sender;
  return {
    kind: CLAIM_JOB,
    batchSize: 50,
    leaseMs: 15_000,
    pollMs: 500,
    async handle(jobs) {
      const out: ChainTxRow[] = [];
      let woke = false;
      for (const job of jobs) {
        const result = await ctx.db.transaction().execute(async (tx) => {
          const c = await tx.selectFrom('claims').selectAll().where('uid', '=', job.ref).executeTakeFirst();
          if (!c) {
            await ctx.queue.complete(tx, job.id);
            return null;
          }
          const reward = await tx.selectFrom('rewards').selectAll().where('uid', '=', c.reward_uid).executeTakeFirstOrThrow();
          const user = await tx.selectFrom('users').select(['uid']).where('uid', '=', c.from_user_uid).executeTakeFirstOrThrow();
          const wallet = await tx
            .selectFrom('wallets')
            .select('address')
            .where('user_uid', '=', user.uid)
            .where('chain_id', '=', sender.chainId)
            .executeTakeFirst();
          const ledger = await lockLedger(ctx, tx, c.reward_uid, c.from_user_uid, false);
          const earlier = await tx
            .selectFrom('allocations')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('reward_uid', '=', c.reward_uid)
            .where('to_user_uid', '=', c.from_user_uid)
            .where('status', '=', 'pending')
            .where('created_at', '<=', c.created_at)
            .executeTakeFirstOrThrow();
          const step = nextClaimStep({
            claimUid: c.uid,
            status: c.status,
            txInFlight: c.tx_id !== null,
            rewardDeployed: reward.status === 'deployed' && reward.contract_address !== null,
            poolWithdrawn: reward.withdraw_status === 'done',
            earlierAllocationsPending: Number(earlier.n),
            slotHolder: ledger?.claimUid ?? null,
            claimable: ledger ? claimableOf(ledger) : 0n,
            hasWallet: wallet !== undefined,
          });
          switch (step.do) {
            case 'skip':
              await ctx.queue.complete(tx, job.id);
              return null;
            case 'wait':
              // Allocations and the slot wake this group when they settle; the delay is a fallback.
              await ctx.queue.defer(tx, job, step.why === 'deployment' ? 2000 : 5000);
              return null;
            case 'complete':
            case 'fail':
              await finishClaim(ctx, tx, c, step.do === 'complete' ? { amount: 0n } : { reason: step.reason });
              await ctx.queue.complete(tx, job.id);
              woke = true;
              return null;
            case 'send':
              return sendClaim(ctx, tx, job.id, c, reward, user, wallet, ledger);
          }
        });
        if (result) out.push(result);
      }
      if (out.length) await sender.broadcast(out);
      if (woke) ctx.queue.notify(CLAIM_JOB);
    },
    async onDead(job, error) {
      await ctx.db.transaction().execute(async (tx) => {
        const c = await tx.selectFrom('claims').selectAll().where('uid', '=', job.ref).executeTakeFirst();
        if (c && c.status === 'pending' && c.tx_id === null) await finishClaim(ctx, tx, c, { reason: `not sent to the chain: ${error}` });
      });
      ctx.queue.notify(CLAIM_JOB);
    },
  };
}

/**
 * Closes a claim: done with the amount the chain paid (0 when nothing was claimable), or failed. Frees
 * the user's claim slot and wakes the claims waiting for it.
 */
async function finishClaim(ctx: Ctx, tx: Tx, c: ClaimRow, end: { amount: bigint; txId?: number } | { reason: string }): Promise<void> {
  const ledger = await lockLedger(ctx, tx, c.reward_uid, c.from_user_uid, false);
  if (ledger) {
    if ('amount' in end) ledger.claimed += end.amount;
    if (ledger.claimUid === c.uid) ledger.claimUid = null;
    await writeLedger(tx, c.reward_uid, c.from_user_uid, ledger);
  }
  const t = nowIso();
  const done: ClaimRow =
    'amount' in end
      ? { ...c, status: 'done', amount: unitsToDb(end.amount), tx_id: end.txId ?? c.tx_id, error: null, updated_at: t }
      : { ...c, status: 'failed', error: end.reason, tx_id: null, updated_at: t };
  await tx
    .updateTable('claims')
    .set({ status: done.status, amount: done.amount, tx_id: done.tx_id, error: done.error, updated_at: t })
    .where('uid', '=', c.uid)
    .execute();
  if (done.status === 'done') await emitEvent(tx, c.app_uid, 'reward.claimed', { claim: claimView(done) });
  else ctx.log.error({ claim: c.uid, reward: c.reward_uid, reason: done.error }, 'claim failed');
  await ctx.queue.wakeGroup(tx, CLAIM_JOB, claimGroup(c.reward_uid, c.from_user_uid));
}

/**
 * Applies a claim transaction: the Claimed event with the claim's ref is the proof of payment and its
 * amount is what the claim took. Without it the request was not executed (wrong nonce, expired,
 * reverted, dropped) or its call failed: it is signed and sent again, a few times.
 */
export function claimTxOutcome(ctx: ChainCtx): OutcomeHandler<typeof CLAIM_TX> {
  const rewardsAbi = artifact('MintworksRewards').abi;
  const client = ctx.sender.client;
  return async ({ row, payload: p, receipt, reason }) => {
    let claimedOnChain: bigint | null = null;
    let executed: boolean | null = null;
    if (receipt?.status === 'success') {
      executed = forwardResults(receipt, p.forwarder as Address).get(`${p.user_address}:${p.nonce}`) ?? null;
      for (const log of parseEventLogs({ abi: rewardsAbi, logs: receipt.logs, eventName: 'Claimed' })) {
        const a = log.args as { amount: bigint; ref: Hex };
        if (log.address.toLowerCase() === p.contract.toLowerCase() && a.ref.toLowerCase() === p.ref.toLowerCase()) claimedOnChain = a.amount;
      }
    }
    // What the chain paid for this claim in every attempt: an earlier one may have been executed
    // without its receipt ever being served, and a later one then pays 0 (the balance is gone).
    const earlier = await claimedBefore(ctx, p, receipt?.transactionHash ?? null);
    if (earlier !== null) claimedOnChain = (claimedOnChain ?? 0n) + earlier;
    // Facts for a failed attempt are read before the transaction (no RPC while holding the database).
    let poolWithdrawn = false;
    let chainNonce: bigint | null = null;
    if (claimedOnChain === null) {
      poolWithdrawn = (await client.readContract({ address: p.contract as Address, abi: rewardsAbi, functionName: 'withdrawn' })) === true;
      chainNonce = await forwarderNonceAt(client, p.forwarder as Address, p.user_address as Address);
    }
    return async (tx) => {
      const c = await tx.selectFrom('claims').selectAll().where('uid', '=', p.claim_uid).executeTakeFirst();
      if (!c) return;
      const step = claimOutcomeStep({
        status: c.status,
        current: c.tx_id === row.id,
        claimedOnChain,
        executed,
        poolWithdrawn,
        rounds: c.rounds,
        maxRounds: MAX_CLAIM_ROUNDS,
      });
      if (step.do === 'ignore') return;
      const notify = () => ctx.queue.notify(CLAIM_JOB);
      if (step.do === 'done') await finishClaim(ctx, tx, c, { amount: step.amount, txId: row.id });
      else if (step.do === 'fail') await finishClaim(ctx, tx, c, { reason: step.reason });
      else {
        // Retry: keep the claim slot (the claims waiting behind it keep waiting), sign again.
        if (step.resyncNonce && chainNonce !== null) await resyncForwarderNonce(tx, ctx.sender.chainId, p.user_address as Address, chainNonce);
        await tx.updateTable('claims').set({ tx_id: null, updated_at: nowIso() }).where('uid', '=', c.uid).execute();
        await ctx.queue.enqueue(tx, { kind: CLAIM_JOB, ref: c.uid, groupKey: claimGroup(c.reward_uid, c.from_user_uid), runAt: Date.now() + 1000 });
        ctx.log.warn({ claim: c.uid, tx: row.id, executed, reason }, 'claim not executed on chain, signing it again');
      }
      return notify;
    };
  };
}

/**
 * The amount paid by Claimed events of this claim's ref in transactions other than `except`, or null
 * when there are none.
 */
async function claimedBefore(ctx: ChainCtx, p: OutcomePayloads[typeof CLAIM_TX], except: Hex | null): Promise<bigint | null> {
  // From the reward's deployment: nothing before it can be a claim of it (and a provider limits log ranges).
  const deployed = await ctx.db
    .selectFrom('chain_txs')
    .select('block_number')
    .where('kind', '=', REWARD_DEPLOY_TX)
    .where('ref', '=', p.reward_uid)
    .where('status', '=', 'mined')
    .executeTakeFirst();
  const logs = await ctx.sender.client.getLogs({
    address: p.contract as Address,
    event: CLAIMED_EVENT,
    args: { ref: p.ref },
    fromBlock: BigInt(deployed?.block_number ?? 0),
  });
  const others = logs.filter((l) => l.transactionHash !== except);
  return others.length ? others.reduce((sum, l) => sum + (l.args.amount ?? 0n), 0n) : null;
}

/** The user's forwarded claim, signed with their key and recorded for the relayer that carries their requests. */
// Long: signing and recording a forwarded claim share the nonce allocated for it.
async function sendClaim(
  ctx: ChainCtx,
  tx: Tx,
  jobId: number,
  c: ClaimRow,
  reward: Selectable<RewardTable>,
  user: { uid: string },
  wallet: { address: string | null } | undefined,
  ledger: LedgerRow | null,
): Promise<ChainTxRow> {
  const sender = ctx.sender;
  const rewardsAbi = artifact('MintworksRewards').abi;
  const account = ctx.keys.user(user.uid);
  const address = account.address.toLowerCase();
  if (address !== wallet?.address) throw new Error(`wallet of user ${user.uid} does not match its derived key`);
  const forwarder = ctx.forwarder;
  const nonce = await allocateForwarderNonce(tx, sender.chainId, account.address, () => forwarderNonceAt(sender.client, forwarder, account.address));
  const ref = chainRef('claim', c.uid);
  const request = await signForwardRequest(account, forwarder, sender.chainId, {
    to: reward.contract_address as Address,
    data: encodeFunctionData({ abi: rewardsAbi, functionName: 'claim', args: [getAddress(c.to_address), ref] }),
    gas: CLAIM_GAS,
    nonce,
    deadline: Math.floor(Date.now() / 1000) + FORWARD_TTL_S,
  });
  // All forwarded requests of a user ride one relayer, so their forwarder nonces stay in order.
  const relayer = sender.relayerFor(address);
  const payload: OutcomePayloads[typeof CLAIM_TX] = {
    claim_uid: c.uid,
    reward_uid: c.reward_uid,
    user_uid: user.uid,
    user_address: address,
    contract: reward.contract_address!,
    forwarder,
    nonce: nonce.toString(),
    ref,
  };
  const rec = await sender.record(tx, {
    kind: CLAIM_TX,
    ref: c.uid,
    payload,
    to: forwarder,
    data: encodeForwardBatch([request], relayer.address),
    gas: forwardBatchGas([request]),
    signer: relayer,
  });
  await tx
    .updateTable('claims')
    .set({ tx_id: rec.id, rounds: c.rounds + 1, updated_at: nowIso() })
    .where('uid', '=', c.uid)
    .execute();
  await writeLedger(tx, c.reward_uid, c.from_user_uid, { ...ledger!, claimUid: c.uid });
  await ctx.queue.complete(tx, jobId);
  return rec;
}
