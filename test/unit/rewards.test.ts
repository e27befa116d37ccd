// Pure reward rules: balance arithmetic, the claim and allocation state machines, chain refs.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  allocationFailureReason,
  allocationOutcomeStep,
  balanceOf,
  chainRef,
  checkBudget,
  claimableOf,
  claimOutcomeStep,
  nextClaimStep,
  type ClaimFacts,
  type ClaimOutcomeFacts,
} from '../../src/domain/rewards.js';
import { parseAmount } from '../../src/domain/amounts.js';

const u = (s: string) => parseAmount(s);

describe('balances', () => {
  it('accepted allocations count at once; claims subtract what the chain paid', () => {
    assert.equal(balanceOf({ allocated: u('1.501'), allocatedDone: 0n, claimed: 0n }, false), u('1.501'));
    assert.equal(balanceOf({ allocated: u('1.501'), allocatedDone: u('1.501'), claimed: u('1.501') }, false), 0n);
    assert.equal(balanceOf({ allocated: u('2'), allocatedDone: u('1'), claimed: u('0.25') }, false), u('1.75'));
  });

  it('reads 0 once the pool is withdrawn, and never negative', () => {
    assert.equal(balanceOf({ allocated: u('5'), allocatedDone: u('5'), claimed: 0n }, true), 0n);
    assert.equal(balanceOf({ allocated: 1n, allocatedDone: 1n, claimed: 2n }, false), 0n);
  });

  it('claimable is confirmed allocations minus claimed, clamped when the chain is ahead', () => {
    assert.equal(claimableOf({ allocated: u('2'), allocatedDone: u('1.5'), claimed: u('0.5') }), u('1'));
    assert.equal(claimableOf({ allocated: u('2'), allocatedDone: u('1'), claimed: u('1.5') }), 0n);
  });

  it('sums in base units are exact: ten allocations of 0.1 are 1', () => {
    let allocated = 0n;
    for (let i = 0; i < 10; i++) allocated += u('0.1');
    assert.equal(balanceOf({ allocated, allocatedDone: allocated, claimed: 0n }, false), u('1'));
  });

  it('the budget refuses more than is left and names what is left', () => {
    assert.deepEqual(checkBudget(u('10'), u('10')), { ok: true, left: 0n });
    assert.deepEqual(checkBudget(u('10'), u('3.3')), { ok: true, left: u('6.7') });
    const r = checkBudget(u('1.5'), u('1.500000000000000001'));
    assert.equal(r.ok, false);
    assert.match((r as { message: string }).message, /1\.5 left to allocate/);
  });
});

describe('nextClaimStep', () => {
  const base: ClaimFacts = {
    claimUid: 'c1',
    status: 'pending',
    txInFlight: false,
    rewardDeployed: true,
    poolWithdrawn: false,
    earlierAllocationsPending: 0,
    slotHolder: null,
    claimable: u('1.501'),
    hasWallet: true,
  };

  it('sends when something is claimable and the slot is free or its own', () => {
    assert.deepEqual(nextClaimStep(base), { do: 'send' });
    assert.deepEqual(nextClaimStep({ ...base, slotHolder: 'c1' }), { do: 'send' }); // a retry keeps its slot
  });

  it('completes with amount 0 and no transaction when nothing is claimable', () => {
    assert.deepEqual(nextClaimStep({ ...base, claimable: 0n }), { do: 'complete', amount: 0n });
    assert.deepEqual(nextClaimStep({ ...base, hasWallet: false }), { do: 'complete', amount: 0n });
  });

  it('waits for another claim of the same user, even with nothing claimable (claims run one at a time)', () => {
    assert.deepEqual(nextClaimStep({ ...base, slotHolder: 'c0' }), { do: 'wait', why: 'slot' });
    assert.deepEqual(nextClaimStep({ ...base, slotHolder: 'c0', claimable: 0n }), { do: 'wait', why: 'slot' });
  });

  it('waits for the deployment and for allocations accepted before it', () => {
    assert.deepEqual(nextClaimStep({ ...base, rewardDeployed: false }), { do: 'wait', why: 'deployment' });
    assert.deepEqual(nextClaimStep({ ...base, earlierAllocationsPending: 2 }), { do: 'wait', why: 'allocations' });
  });

  it('never touches a finished claim or one with a transaction out', () => {
    assert.deepEqual(nextClaimStep({ ...base, status: 'done' }), { do: 'skip' });
    assert.deepEqual(nextClaimStep({ ...base, status: 'failed' }), { do: 'skip' });
    assert.deepEqual(nextClaimStep({ ...base, txInFlight: true }), { do: 'skip' });
  });

  it('fails on a withdrawn pool', () => {
    assert.deepEqual(nextClaimStep({ ...base, poolWithdrawn: true }), { do: 'fail', reason: 'Reward has been withdrawn.' });
  });

  it('twenty concurrent claims: one sends, the rest wait, then complete with 0', () => {
    // A small simulation of the job loop over the ledger, with the chain paying the whole allocation.
    let slot: string | null = null;
    let claimed = 0n;
    const allocatedDone = u('3');
    const paid: bigint[] = [];
    const pending = Array.from({ length: 20 }, (_, i) => `c${i}`);
    let inFlight: string | null = null;
    while (pending.length) {
      for (const c of [...pending]) {
        const step = nextClaimStep({
          ...base,
          claimUid: c,
          slotHolder: slot,
          txInFlight: c === inFlight,
          claimable: claimableOf({ allocated: allocatedDone, allocatedDone, claimed }),
        });
        if (step.do === 'send') {
          slot = c;
          inFlight = c;
        } else if (step.do === 'complete') {
          paid.push(0n);
          pending.splice(pending.indexOf(c), 1);
        }
      }
      if (inFlight) {
        // The chain pays the whole on-chain allocation to the claim in flight.
        const o = claimOutcomeStep({
          status: 'pending',
          current: true,
          claimedOnChain: allocatedDone - claimed,
          executed: true,
          poolWithdrawn: false,
          rounds: 1,
          maxRounds: 5,
        });
        assert.equal(o.do, 'done');
        const amount = (o as { amount: bigint }).amount;
        claimed += amount;
        paid.push(amount);
        pending.splice(pending.indexOf(inFlight), 1);
        inFlight = null;
        slot = null;
      }
    }
    assert.equal(paid.length, 20);
    assert.equal(
      paid.reduce((a, b) => a + b, 0n),
      allocatedDone,
    );
    assert.equal(paid.filter((p) => p > 0n).length, 1);
  });
});

describe('claimOutcomeStep', () => {
  const base: ClaimOutcomeFacts = { status: 'pending', current: true, claimedOnChain: null, executed: null, poolWithdrawn: false, rounds: 1, maxRounds: 5 };

  it('the Claimed event decides the amount, exactly, even from a superseded transaction', () => {
    assert.deepEqual(claimOutcomeStep({ ...base, claimedOnChain: u('1.501'), executed: true }), { do: 'done', amount: u('1.501') });
    assert.deepEqual(claimOutcomeStep({ ...base, claimedOnChain: 0n, executed: true }), { do: 'done', amount: 0n });
    assert.deepEqual(claimOutcomeStep({ ...base, current: false, claimedOnChain: 5n }), { do: 'done', amount: 5n });
  });

  it('is idempotent on finished claims and ignores superseded attempts without payment', () => {
    assert.deepEqual(claimOutcomeStep({ ...base, status: 'done', claimedOnChain: 5n }), { do: 'ignore' });
    assert.deepEqual(claimOutcomeStep({ ...base, status: 'failed' }), { do: 'ignore' });
    assert.deepEqual(claimOutcomeStep({ ...base, current: false }), { do: 'ignore' });
  });

  it('not executed: retry from the chain nonce; executed but failed: retry with the next nonce', () => {
    assert.deepEqual(claimOutcomeStep({ ...base, executed: null }), { do: 'retry', resyncNonce: true });
    assert.deepEqual(claimOutcomeStep({ ...base, executed: false }), { do: 'retry', resyncNonce: false });
  });

  it('gives up after the last round, and at once on a withdrawn pool', () => {
    assert.deepEqual(claimOutcomeStep({ ...base, rounds: 5 }), { do: 'fail', reason: 'claim not executed after 5 attempts' });
    assert.deepEqual(claimOutcomeStep({ ...base, poolWithdrawn: true, executed: false }), { do: 'fail', reason: 'Reward has been withdrawn.' });
  });
});

describe('allocationOutcomeStep', () => {
  it('done when on chain; a failed batch retries its allocations one by one; gives up at the last round', () => {
    assert.deepEqual(allocationOutcomeStep({ status: 'pending', onChain: true, rounds: 1, maxRounds: 5, batched: true }), { do: 'done' });
    assert.deepEqual(allocationOutcomeStep({ status: 'pending', onChain: false, rounds: 1, maxRounds: 5, batched: true }), { do: 'retry', solo: true });
    assert.deepEqual(allocationOutcomeStep({ status: 'pending', onChain: false, rounds: 2, maxRounds: 5, batched: false }), { do: 'retry', solo: false });
    assert.deepEqual(allocationOutcomeStep({ status: 'pending', onChain: false, rounds: 5, maxRounds: 5, batched: false }), { do: 'fail' });
    assert.deepEqual(allocationOutcomeStep({ status: 'done', onChain: true, rounds: 1, maxRounds: 5, batched: false }), { do: 'ignore' });
    assert.deepEqual(allocationOutcomeStep({ status: 'failed', onChain: false, rounds: 1, maxRounds: 5, batched: false }), { do: 'ignore' });
  });

  it('failure reasons from the contract errors', () => {
    assert.match(allocationFailureReason('InsufficientSupply'), /enough/);
    assert.match(allocationFailureReason('PoolWithdrawn'), /withdrawn/);
    assert.equal(allocationFailureReason('Weird'), 'reverted on chain: Weird');
    assert.equal(allocationFailureReason(null), 'not confirmed on chain');
  });
});

describe('chainRef', () => {
  it('is the padded ASCII of kind and uid, distinct per kind', () => {
    const a = chainRef('allocation', '816379099131');
    assert.equal(a, `0x${Buffer.from('a:816379099131').toString('hex').padEnd(64, '0')}`);
    assert.equal(a.length, 66);
    assert.notEqual(chainRef('claim', '816379099131'), a);
    assert.throws(() => chainRef('claim', 'x'.repeat(31)));
  });
});
