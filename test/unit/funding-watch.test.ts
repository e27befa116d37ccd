// Readiness never flips on a missed answer: a balance that cannot be read (a busy node's timeout) is
// the last one read, not an empty account, and the chain stays ready; an account never read is unknown;
// a node that answers nothing is unreachable.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { PublicClient } from 'viem';
import { FundingWatch } from '../../src/chain/funding-watch.js';
import { judgeChain } from '../../src/domain/chain-funding.js';
import type { ChainSpec } from '../../src/chain/chains.js';

describe('the funding watch', () => {
  it('a balance read that fails stands as the last one read; readiness holds', async () => {
    let failing = false;
    const probe = {
      async getBalance() {
        if (failing) throw new Error('The request took too long to respond.');
        return 998n * 10n ** 18n;
      },
    } as unknown as PublicClient;
    const watch = new FundingWatch({ id: 80002, name: 'Amoy', currency: 'POL' } as ChainSpec, probe, pino({ level: 'silent' }));
    const accounts = [
      { address: '0xd', role: 'deployer' as const },
      { address: '0xr', role: 'relayer' as const },
    ];
    const first = await watch.balances(accounts);
    assert.equal(first.readings[1].balance, 998n * 10n ** 18n);
    failing = true;
    const missed = await watch.balances(accounts);
    assert.equal(missed.readings[1].balance, 998n * 10n ** 18n, 'the last balance read');
    assert.equal(missed.fresh, 0);
    const verdict = judgeChain({ reachable: true, forwarderDeployed: true, accounts: missed.readings });
    assert.equal(verdict.ready, true, verdict.reason ?? '');
    const never = await watch.balances([{ address: '0xnew', role: 'relayer' }]);
    assert.equal(never.readings[0].balance, null, 'never read: unknown');
    // A node that answers nothing at all is unreachable, whatever was read before.
    assert.equal((await watch.reading('0xd', ['0xr'], null)).reachable, false);
    failing = false;
    assert.equal((await watch.reading('0xd', ['0xr'], null)).reachable, true);
  });
});
