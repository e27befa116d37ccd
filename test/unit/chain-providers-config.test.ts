// Settings of providers, low balances and alerts: lists of RPC URLs, per-chain overrides, the alert
// secret, and the low-balance threshold rule.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, ConfigError } from '../../src/config/config.js';
import { rpcUrlsOf } from '../../src/chain/chains.js';
import { judgeChain, LOW_BALANCE_WEI, lowBalanceThreshold, median } from '../../src/domain/chain-funding.js';
import { alertBody } from '../../src/chain/alerts.js';
import { CANCELLED_REASON, cancelFees, cancelledByOperator, isCancellation } from '../../src/chain/cancel.js';
import { serializeEip1559 } from '../../src/chain/signing.js';

const base = { DATA_DIR: '/tmp/mw-chains-test', PORT: '8080' };

describe('providers, low balances and alerts: configuration', () => {
  it('a CHAINS entry takes one rpc URL or a list (in order), with rpcTimeoutMs and lowBalanceWei', () => {
    const c = loadConfig({
      ...base,
      EMBEDDED_CHAIN: 'false',
      CHAINS: JSON.stringify([
        { id: 80002, name: 'Amoy', rpc: ['https://a.example/v2/key/', 'https://b.example'], rpcTimeoutMs: 4000, lowBalanceWei: '5000000000000000000' },
        { id: 5, name: 'One', rpc: 'http://127.0.0.1:1' },
      ]),
    });
    assert.deepEqual(rpcUrlsOf(c.chains[0]), ['https://a.example/v2/key', 'https://b.example']);
    assert.equal(c.chains[0].rpc, 'https://a.example/v2/key', 'rpc is the first of the list');
    assert.equal(c.chains[0].rpcTimeoutMs, 4000);
    assert.equal(c.chains[0].lowBalanceWei, 5n * 10n ** 18n);
    assert.deepEqual(rpcUrlsOf(c.chains[1]), ['http://127.0.0.1:1']);
    assert.equal(c.chains[1].lowBalanceWei, undefined);
  });

  it('refuses an empty list, a bad URL in a list, a bad lowBalanceWei, naming the field', () => {
    const bad = (chains: unknown) => () => loadConfig({ ...base, EMBEDDED_CHAIN: 'false', CHAINS: JSON.stringify(chains) });
    assert.throws(bad([{ id: 5, name: 'X', rpc: [] }]), /CHAINS\[0\]\.rpc/);
    assert.throws(bad([{ id: 5, name: 'X', rpc: ['https://a.example', 'ftp://b'] }]), /CHAINS\[0\]\.rpc/);
    assert.throws(bad([{ id: 5, name: 'X', rpc: 'https://a.example', lowBalanceWei: '1.5' }]), /CHAINS\[0\]\.lowBalanceWei/);
    assert.throws(bad([{ id: 5, name: 'X', rpc: 'https://a.example', rpcTimeoutMs: 5 }]), /CHAINS\[0\]\.rpcTimeoutMs/);
  });

  it('CHAIN_RPC_URL may be a comma-separated list; each must be an http(s) URL', () => {
    const c = loadConfig({ ...base, CHAIN_RPC_URL: 'https://a.example/rpc/, https://b.example/rpc', CHAIN_ID: '80002' });
    assert.deepEqual(rpcUrlsOf(c.chains[0]), ['https://a.example/rpc', 'https://b.example/rpc']);
    assert.equal(c.chainRpcUrl, 'https://a.example/rpc/', 'the first provider, as given');
    assert.throws(
      () => loadConfig({ ...base, CHAIN_RPC_URL: 'https://a.example, nope' }),
      (err: Error) => err instanceof ConfigError && /CHAIN_RPC_URL/.test(err.message),
    );
  });

  it('ALERT_WEBHOOK_URL needs a whsec_ secret', () => {
    assert.throws(() => loadConfig({ ...base, ALERT_WEBHOOK_URL: 'https://ops.example/alerts' }), /ALERT_WEBHOOK_SECRET: required/);
    assert.throws(() => loadConfig({ ...base, ALERT_WEBHOOK_URL: 'https://ops.example/alerts', ALERT_WEBHOOK_SECRET: 'short' }), /ALERT_WEBHOOK_SECRET/);
    const secret = 'whsec_' + Buffer.alloc(32, 1).toString('base64');
    const c = loadConfig({ ...base, ALERT_WEBHOOK_URL: 'https://ops.example/alerts', ALERT_WEBHOOK_SECRET: secret });
    assert.equal(c.alertWebhookSecret, secret);
    assert.deepEqual(JSON.parse(alertBody('alert_1', 'chain.tx_stuck', { tx: 3 }, 0, 2)), {
      alert: 'chain.tx_stuck',
      alert_id: 'alert_1',
      time: '1970-01-01T00:00:00.000Z',
      attempt: 2,
      data: { tx: 3 },
    });
  });

  it('the low-balance threshold: configured, else 1,000 mints at the fee, never under 0.01', () => {
    assert.equal(lowBalanceThreshold(10n ** 9n, 7n), 7n, 'configured wins');
    assert.equal(lowBalanceThreshold(null), LOW_BALANCE_WEI);
    assert.equal(lowBalanceThreshold(1n), LOW_BALANCE_WEI, 'cheap chains keep the floor');
    assert.equal(lowBalanceThreshold(30n * 10n ** 9n), 1000n * 60_000n * 30n * 10n ** 9n, '1.8 of the currency at 30 gwei');
    assert.equal(median([5n, 1n, 100n]), 5n);
    const accounts = [{ address: '0xa', role: 'relayer' as const, balance: 10n ** 18n }];
    assert.equal(judgeChain({ reachable: true, forwarderDeployed: true, accounts }, 2n * 10n ** 18n).accounts[0].low, true);
    assert.equal(judgeChain({ reachable: true, forwarderDeployed: true, accounts }).accounts[0].low, false);
  });

  it("a cancellation raises both fees by 12.5 % or to today's; a self-transfer receipt is a cancellation", () => {
    const raw = serializeEip1559(
      {
        type: 'eip1559',
        chainId: 1,
        nonce: 4,
        to: '0x000000000000000000000000000000000000bEEF',
        data: '0x',
        gas: 21000n,
        value: 0n,
        maxFeePerGas: 1000n,
        maxPriorityFeePerGas: 100n,
      },
      { yParity: 0, r: '0x01', s: '0x01' },
    );
    assert.deepEqual(cancelFees(raw, { maxFeePerGas: 1n, maxPriorityFeePerGas: 1n }), { maxFeePerGas: 1126n, maxPriorityFeePerGas: 113n });
    assert.deepEqual(cancelFees(raw, { maxFeePerGas: 5000n, maxPriorityFeePerGas: 200n }), { maxFeePerGas: 5000n, maxPriorityFeePerGas: 200n });
    const me = '0x00000000000000000000000000000000000000aa';
    assert.equal(isCancellation({ from: me, to: me.toUpperCase().replace('0X', '0x') } as any), true);
    assert.equal(isCancellation({ from: me, to: '0x000000000000000000000000000000000000bEEF' } as any), false);
    assert.equal(isCancellation({ from: me, to: null } as any), false, 'a deployment');
    // Only a row the operator cancelled ends as cancelled: a self-transfer the sender puts at a nonce to fill it does not.
    assert.equal(cancelledByOperator({ error: CANCELLED_REASON }, { from: me, to: me } as any), true);
    assert.equal(cancelledByOperator({ error: null }, { from: me, to: me } as any), false);
    assert.equal(
      cancelledByOperator({ error: CANCELLED_REASON }, { from: me, to: '0x000000000000000000000000000000000000bEEF' } as any),
      false,
      'the original was mined first',
    );
  });
});
