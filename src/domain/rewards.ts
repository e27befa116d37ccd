// Pure rules of rewards: balance arithmetic over the per-(reward, user) ledger, and the state machines
// of allocations and claims. No I/O and no clock: src/services/rewards.ts feeds them facts read from
// the database and the chain, and carries out the step they return.
//
// The model. For each (reward, user) the ledger keeps three running sums, in base units:
//   allocated       allocations accepted by the API and not failed (pending + done)
//   allocated_done  allocations the chain has confirmed
//   claimed         what claims paid, as the contract's Claimed events reported it
// The contract pays a claim the user's whole on-chain allocation at the moment the claim is mined,
// and is the authority on how much that was; the service makes sure that moment is a meaningful one:
//   - a claim waits until every allocation accepted before it is on chain, so it takes them all;
//   - claims of one user and reward run one at a time (the ledger's claim slot), so the second of
//     twenty concurrent claims sees what the first took and pays the rest (zero) without a transaction.
// The contract itself guarantees that the total paid never exceeds what was allocated.

import { formatUnits } from './amounts.js';

export interface Ledger {
  allocated: bigint;
  allocatedDone: bigint;
  claimed: bigint;
}

/**
 * The balance of GET /reward/balance: accepted allocations minus what was claimed. Pending allocations count
 * at once ("balances are readable at once"); a claim takes them once they are on chain. After the
 * pool was withdrawn nothing is claimable any more (the contract reads 0 too).
 */
export function balanceOf(l: Ledger, withdrawn: boolean): bigint {
  if (withdrawn) return 0n;
  const b = l.allocated - l.claimed;
  return b > 0n ? b : 0n;
}

/**
 * What a claim executed now would be expected to take: confirmed allocations minus claimed. Clamped at
 * zero because the chain can be ahead of the ledger (a claim mined after an allocation whose outcome
 * the service has not applied yet reports more than allocated_done).
 */
export function claimableOf(l: Ledger): bigint {
  const c = l.allocatedDone - l.claimed;
  return c > 0n ? c : 0n;
}

/** The budget check of an allocation; the message names what is left so the caller can adjust. */
export function checkBudget(unallocated: bigint, amount: bigint): { ok: true; left: bigint } | { ok: false; message: string } {
  if (amount <= unallocated) return { ok: true, left: unallocated - amount };
  return { ok: false, message: `Amount exceeds what the reward still holds: ${formatUnits(unallocated)} left to allocate.` };
}

// --------------------------------------------------------------------------------------- claims

export type ClaimStatus = 'pending' | 'done' | 'failed';

export interface ClaimFacts {
  claimUid: string;
  status: ClaimStatus;
  /** A chain transaction of this claim is out; its outcome decides. */
  txInFlight: boolean;
  rewardDeployed: boolean;
  /** The pool was withdrawn on chain: nothing can be claimed any more. */
  poolWithdrawn: boolean;
  /** Allocations of this user and reward accepted before the claim and not yet on chain (or failed). */
  earlierAllocationsPending: number;
  /** The claim holding the user's claim slot, if any. */
  slotHolder: string | null;
  claimable: bigint;
  /** The user has a wallet (no wallet means nothing was ever allocated). */
  hasWallet: boolean;
}

export type ClaimStep =
  | { do: 'skip' } // finished, or a transaction is out
  | { do: 'wait'; why: 'deployment' | 'allocations' | 'slot' }
  | { do: 'complete'; amount: 0n } // nothing to take: done with amount 0, no transaction
  | { do: 'send' } // take the slot and send the forwarded claim
  | { do: 'fail'; reason: string };

/** What a claim job does next. Order matters: a finished claim is never touched again. */
export function nextClaimStep(f: ClaimFacts): ClaimStep {
  if (f.status !== 'pending' || f.txInFlight) return { do: 'skip' };
  // A withdrawal waits for the claims accepted before it was requested, and no claim is accepted
  // after, so this is a safety net: the pool's tokens are gone, the claim cannot pay anything.
  if (f.poolWithdrawn) return { do: 'fail', reason: 'Reward has been withdrawn.' };
  if (!f.rewardDeployed) return { do: 'wait', why: 'deployment' };
  if (f.earlierAllocationsPending > 0) return { do: 'wait', why: 'allocations' };
  if (f.slotHolder !== null && f.slotHolder !== f.claimUid) return { do: 'wait', why: 'slot' };
  if (f.claimable === 0n || !f.hasWallet) return { do: 'complete', amount: 0n };
  return { do: 'send' };
}

export interface ClaimOutcomeFacts {
  status: ClaimStatus;
  /** The transaction this outcome belongs to is the claim's current one. */
  current: boolean;
  /** The amount of the Claimed event carrying this claim's ref in the receipt, if there is one. */
  claimedOnChain: bigint | null;
  /** The forwarder's verdict on the request: true/false = executed (inner call ok/failed), null = not executed. */
  executed: boolean | null;
  poolWithdrawn: boolean;
  /** Transactions sent for this claim so far, this one included. */
  rounds: number;
  maxRounds: number;
}

export type ClaimOutcomeStep = { do: 'ignore' } | { do: 'done'; amount: bigint } | { do: 'retry'; resyncNonce: boolean } | { do: 'fail'; reason: string };

/** Applies a mined (or failed) claim transaction to the claim. */
export function claimOutcomeStep(f: ClaimOutcomeFacts): ClaimOutcomeStep {
  if (f.status !== 'pending') return { do: 'ignore' }; // idempotent: re-applied after a rewind
  // The event is the proof of payment, whichever transaction carried it (a superseded one included).
  if (f.claimedOnChain !== null) return { do: 'done', amount: f.claimedOnChain };
  if (!f.current) return { do: 'ignore' }; // an older attempt that did nothing: the current one decides
  if (f.poolWithdrawn) return { do: 'fail', reason: 'Reward has been withdrawn.' };
  if (f.rounds >= f.maxRounds) return { do: 'fail', reason: `claim not executed after ${f.rounds} attempts` };
  // Not executed at all (a wrong forwarder nonce, an expired request, a reverted or dropped
  // transaction): sign again from the chain's nonce. Executed but failed: the nonce was used, the
  // database's next nonce is right.
  return { do: 'retry', resyncNonce: f.executed !== false };
}

// ---------------------------------------------------------------------------------- allocations

export type AllocationStatus = 'pending' | 'done' | 'failed';

export interface AllocationOutcomeFacts {
  status: AllocationStatus;
  /** The Allocated event with this allocation's ref is in the receipt, or usedRef(ref) reads true. */
  onChain: boolean;
  /** Transactions sent for this allocation so far, this one included. */
  rounds: number;
  maxRounds: number;
  /** This transaction carried other allocations too (allocateBatch is all-or-nothing). */
  batched: boolean;
}

export type AllocationOutcomeStep = { do: 'ignore' } | { do: 'done' } | { do: 'retry'; solo: boolean } | { do: 'fail' };

/**
 * Applies a mined (or failed) allocation transaction to one of its allocations. A batch fails as a
 * whole, so its allocations are retried one per transaction: an innocent one then succeeds and a bad
 * one fails alone, with its own reason.
 */
export function allocationOutcomeStep(f: AllocationOutcomeFacts): AllocationOutcomeStep {
  if (f.status !== 'pending') return { do: 'ignore' };
  if (f.onChain) return { do: 'done' };
  if (f.rounds >= f.maxRounds) return { do: 'fail' };
  return { do: 'retry', solo: f.batched };
}

/** The reason kept on a failed allocation, from the contract's custom error when the chain gave one. */
export function allocationFailureReason(errorName: string | null): string {
  switch (errorName) {
    case 'InsufficientSupply':
      return 'The reward contract does not hold enough unallocated tokens.';
    case 'DuplicateRef':
      return 'The reward contract has already seen this allocation.';
    case 'PoolWithdrawn':
      return 'Reward has been withdrawn.';
    case 'ZeroAddress':
      return 'The user has no wallet address.';
    case 'NotOperator':
      return 'The service is not an operator of the reward contract.';
    default:
      return errorName ? `reverted on chain: ${errorName}` : 'not confirmed on chain';
  }
}

// ----------------------------------------------------------------------------------- references

/**
 * The bytes32 `ref` the contract records for an allocation or echoes for a claim: the ASCII of
 * "<a|c>:<uid>", right-padded, so a ref read from the chain names its row.
 */
export function chainRef(kind: 'allocation' | 'claim', uid: string): `0x${string}` {
  const text = `${kind === 'allocation' ? 'a' : 'c'}:${uid}`;
  if (text.length > 32) throw new Error(`ref too long: ${text}`);
  let hex = '';
  for (const ch of text) hex += ch.charCodeAt(0).toString(16).padStart(2, '0');
  return `0x${hex.padEnd(64, '0')}`;
}
