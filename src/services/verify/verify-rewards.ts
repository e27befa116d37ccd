// The verifier's walk over rewards: each deployed reward's allocations (usedRef), claims (what their
// transactions' Claimed events paid) and per-user balances (allocated() on chain against the ledger).
import type { Address } from 'viem';
import type { Ctx } from '../context.js';
import { CLAIM_TX } from '../../chain/outcomes.js';
import { chainRef } from '../../domain/rewards.js';
import { unitsFromDb } from '../../domain/amounts.js';
import { allocationDivergences, balanceDivergences, claimDivergences, type Found } from './divergences.js';
import { mapLimit, readAllocated, readClaimPaid, readUsedRef, type ChainClient } from './chain-reader.js';
import { PAGE, READ_CONCURRENCY } from './verify-assets.js';
import type { Tally } from './tally.js';

export interface RewardRef {
  uid: string;
  app_uid: string;
  contract_address: string;
  withdrawn: boolean;
}

type ClaimRow = { uid: string; app_uid: string; reward_uid: string; status: 'pending' | 'done' | 'failed'; amount: string | null };

/** Checks claims against the receipts of every transaction sent for them; the divergences of each claim judged. */
export async function checkClaims(
  ctx: Ctx,
  client: ChainClient,
  chainId: number,
  rewards: ReadonlyMap<string, RewardRef>,
  claims: readonly ClaimRow[],
  t: Tally,
): Promise<Map<string, Found[]>> {
  const settled = claims.filter((c) => c.status !== 'pending');
  for (const c of claims) if (c.status === 'pending') t.inFlight('claims');
  const hashes = new Map<string, string[]>();
  for (let i = 0; i < settled.length; i += PAGE) {
    const txs = await ctx.db
      .selectFrom('chain_txs')
      .select(['ref', 'hash', 'prior_hashes'])
      .where('chain_id', '=', chainId)
      .where('kind', '=', CLAIM_TX)
      .where(
        'ref',
        'in',
        settled.slice(i, i + PAGE).map((c) => c.uid),
      )
      .execute();
    for (const tx of txs) hashes.set(tx.ref, [...(hashes.get(tx.ref) ?? []), tx.hash, ...(JSON.parse(tx.prior_hashes) as string[])]);
  }
  const verdicts = await mapLimit(settled, READ_CONCURRENCY, async (c) => {
    const reward = rewards.get(c.reward_uid)!;
    const own = hashes.get(c.uid) ?? [];
    const { paid, receipts } = await readClaimPaid(client, reward.contract_address as Address, chainRef('claim', c.uid), own);
    return claimDivergences({ uid: c.uid, app_uid: c.app_uid, status: c.status, amount: c.amount, paid, receiptsFound: receipts > 0 || own.length === 0 });
  });
  const judged = new Map<string, Found[]>();
  verdicts.forEach((v, i) => {
    if (v.inFlight) return;
    if (v.unverified) return void t.unverified('claims');
    t.checked('claims');
    judged.set(settled[i].uid, v.found);
  });
  return judged;
}

/** Every allocation, claim and balance of the given rewards. */
export async function checkRewardRecords(ctx: Ctx, client: ChainClient, chainId: number, rewards: ReadonlyMap<string, RewardRef>, t: Tally): Promise<Found[]> {
  const found: Found[] = [];
  for (const r of rewards.values()) {
    const contract = r.contract_address as Address;
    let after = '';
    for (;;) {
      const rows = await ctx.db
        .selectFrom('allocations')
        .select(['uid', 'app_uid', 'status'])
        .where('reward_uid', '=', r.uid)
        .where('uid', '>', after)
        .orderBy('uid')
        .limit(PAGE)
        .execute();
      const verdicts = await mapLimit(rows, READ_CONCURRENCY, async (a) =>
        allocationDivergences({
          uid: a.uid,
          app_uid: a.app_uid,
          status: a.status,
          used: a.status === 'pending' ? null : await readUsedRef(client, contract, chainRef('allocation', a.uid)),
        }),
      );
      for (const v of verdicts) {
        if (v.inFlight) t.inFlight('allocations');
        else {
          t.checked('allocations');
          found.push(...v.found);
        }
      }
      if (rows.length < PAGE) break;
      after = rows[rows.length - 1].uid;
    }
    after = '';
    for (;;) {
      const rows = await ctx.db
        .selectFrom('claims')
        .select(['uid', 'app_uid', 'reward_uid', 'status', 'amount'])
        .where('reward_uid', '=', r.uid)
        .where('uid', '>', after)
        .orderBy('uid')
        .limit(PAGE)
        .execute();
      for (const f of (await checkClaims(ctx, client, chainId, rewards, rows, t)).values()) found.push(...f);
      if (rows.length < PAGE) break;
      after = rows[rows.length - 1].uid;
    }
    found.push(...(await checkBalances(ctx, client, chainId, r, t)));
  }
  return found;
}

/** Each (reward, user) ledger row against allocated(wallet) on chain. */
async function checkBalances(ctx: Ctx, client: ChainClient, chainId: number, r: RewardRef, t: Tally): Promise<Found[]> {
  const found: Found[] = [];
  let after = '';
  for (;;) {
    const rows = await ctx.db
      .selectFrom('reward_balances')
      .leftJoin('wallets', (j) => j.onRef('wallets.user_uid', '=', 'reward_balances.user_uid').on('wallets.chain_id', '=', chainId))
      .select(['reward_balances.user_uid', 'reward_balances.allocated_done', 'reward_balances.claimed', 'wallets.address'])
      .where('reward_balances.reward_uid', '=', r.uid)
      .where('reward_balances.user_uid', '>', after)
      .orderBy('reward_balances.user_uid')
      .limit(PAGE)
      .execute();
    if (rows.length === 0) break;
    const users = rows.map((b) => b.user_uid);
    const [allocs, claims] = await Promise.all([
      ctx.db
        .selectFrom('allocations')
        .select('to_user_uid as user')
        .where('reward_uid', '=', r.uid)
        .where('status', '=', 'pending')
        .where('to_user_uid', 'in', users)
        .execute(),
      ctx.db
        .selectFrom('claims')
        .select('from_user_uid as user')
        .where('reward_uid', '=', r.uid)
        .where('status', '=', 'pending')
        .where('from_user_uid', 'in', users)
        .execute(),
    ]);
    const busy = new Set([...allocs, ...claims].map((x) => x.user));
    const verdicts = await mapLimit(rows, READ_CONCURRENCY, async (b) =>
      balanceDivergences({
        reward_uid: r.uid,
        user_uid: b.user_uid,
        app_uid: r.app_uid,
        allocatedDone: unitsFromDb(b.allocated_done),
        claimed: unitsFromDb(b.claimed),
        busy: busy.has(b.user_uid),
        withdrawn: r.withdrawn,
        onChain: busy.has(b.user_uid) || r.withdrawn || !b.address ? null : await readAllocated(client, r.contract_address as Address, b.address as Address),
      }),
    );
    for (const v of verdicts) {
      if (v.inFlight) t.inFlight('reward_balances');
      else {
        t.checked('reward_balances');
        found.push(...v.found);
      }
    }
    if (rows.length < PAGE) break;
    after = rows[rows.length - 1].user_uid;
  }
  return found;
}

export type { ClaimRow };
