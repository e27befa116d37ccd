// The Reward, Balance, Allocation and Claim objects of the API (docs/api.md, Objects), built from rows. Key order is part of
// the contract. Amounts leave as JSON numbers made from the exact decimal (see domain/amounts.ts).
import type { Selectable } from 'kysely';
import type { Installation } from '../../config/config.js';
import type { AllocationTable, ClaimTable, RewardTable } from '../../store/schema.js';
import { formatUnits, unitsFromDb, unitsToNumber } from '../../domain/amounts.js';
import { lowerHex, chainOf } from '../views.js';

export type RewardRow = Selectable<RewardTable>;
export type AllocationRow = Selectable<AllocationTable>;
export type ClaimRow = Selectable<ClaimTable>;

export function rewardView(r: RewardRow, installation: Installation) {
  const n = chainOf(installation, r.chain_id);
  const deployed = r.status === 'deployed' && r.contract_address !== null;
  return {
    uid: r.uid,
    name: r.name,
    status: deployed ? 'deployed' : 'deploying',
    token_type: 'ERC20',
    token_name: r.token_name,
    created_at: r.created_at,
    contract_address: deployed ? lowerHex(r.contract_address) : null,
    withdraw_receiver: lowerHex(r.withdraw_receiver),
    description: r.description,
    explorer_url: deployed ? `${n.explorer}/address/${lowerHex(r.contract_address)}` : null,
    chain: n.chain,
    network: n.network,
    chain_id: n.chain_id,
  };
}

/** The management API's view: the public object plus the pool's budget and withdrawal state. */
export function rewardAdminView(r: RewardRow, installation: Installation) {
  return {
    ...rewardView(r, installation),
    token_symbol: r.token_symbol,
    supply: formatUnits(unitsFromDb(r.supply)), // exact decimal text: the console shows it verbatim
    unallocated: formatUnits(unitsFromDb(r.unallocated)),
    withdraw_status: r.withdraw_status, // null | requested | done
    withdrawn_amount: r.withdrawn_amount === null ? null : formatUnits(unitsFromDb(r.withdrawn_amount)),
    withdrawn_at: r.withdrawn_at,
  };
}

/** A failed allocation or claim also carries `reason` (last key), as cancelled transfers do. */
const withReason = <T extends object>(v: T, status: string, reason: string | null) => (status === 'failed' ? { ...v, reason: reason ?? 'failed' } : v);

export function allocationView(a: AllocationRow) {
  const v = {
    uid: a.uid,
    reward_uid: a.reward_uid,
    to_user_uid: a.to_user_uid,
    amount: unitsToNumber(unitsFromDb(a.amount)),
    // Echoed as the client sent it: a JSON number stays a number.
    nonce: a.nonce_is_number === 1 ? Number(a.nonce) : a.nonce,
    created_at: a.created_at,
    status: a.status,
  };
  return withReason(v, a.status, a.error);
}

export function claimView(c: ClaimRow) {
  const v = {
    uid: c.uid,
    reward_uid: c.reward_uid,
    from_user_uid: c.from_user_uid,
    to_address: lowerHex(c.to_address),
    amount: unitsToNumber(unitsFromDb(c.amount)), // what was claimed: 0 until done
    created_at: c.created_at,
    status: c.status, // pending | done; failed only when the chain refused it for good (with `reason`)
  };
  return withReason(v, c.status, c.error);
}

export function balanceView(rewardUid: string, userUid: string, units: bigint) {
  return { reward_uid: rewardUid, user_uid: userUid, amount: unitsToNumber(units) };
}
