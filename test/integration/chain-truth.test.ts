// Heavy (a 1 s chain and a few hundred transactions behind a lagging provider), judged on correctness only: it shares the machine.
// The record never disagrees with the chain, behind a provider whose backends lag: an external anvil
// (1 s blocks) behind a proxy that answers eth_getTransactionReceipt with null for a share of the
// lookups of transactions that are in fact mined, then also answers the head and account nonces from
// seconds ago; a second provider behind its own lagging proxy disagrees with the first (it answers
// from further behind, and is asked when a judgement must not rest on one backend). A mixed workload (deployments, mints, edits, transfers, burns, allocations, claims) ends
// with every contract deployed once, every token minted once, every owner, burn and claim as on chain.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startExternalNode, type ExternalNode } from '../helpers/external-node.js';
import { RpcFaultProxy } from '../helpers/rpc-fault-proxy.js';
import { startOnExternalChain, type TestService } from '../helpers/service.js';
import { assertChainAgrees, assertVerifyClean, LAGGING_SCENARIO, runWorkload } from '../helpers/chain-workload.js';

const CHAIN = 80002;

describe('a provider whose backends lag (anvil with 1 s blocks behind a proxy)', () => {
  let node: ExternalNode;
  let proxy: RpcFaultProxy;
  let second: RpcFaultProxy;
  let t: TestService;
  /** The installation's settings, for the CLI. */
  const cliEnv = () => ({
    EMBEDDED_CHAIN: 'false',
    CHAINS: JSON.stringify([{ id: CHAIN, name: 'Lagging', rpc: [proxy.url, second.url] }]),
    DATA_DIR: t.dataDir,
  });

  before(async () => {
    node = await startExternalNode({ kind: 'anvil', chainId: CHAIN, blockTimeS: 1 });
    proxy = await RpcFaultProxy.start(node.url, {}, { seed: 38, dropMethod: node.dropMethod });
    second = await RpcFaultProxy.start(node.url, {}, { seed: 83, dropMethod: node.dropMethod });
    t = await startOnExternalChain('sqlite', { id: CHAIN, name: 'Lagging', rpc: [proxy.url, second.url] }, node.fund, { MINT_BATCH_SIZE: '10' });
  });
  after(async () => {
    await t?.stop();
    await proxy?.stop();
    await second?.stop();
    await node?.stop();
  });

  it('receipts missing for half the lookups: every record as the chain shows it', async () => {
    proxy.plan = { receiptMissRate: 0.5 };
    second.plan = { receiptMissRate: 0.5 };
    const w = await runWorkload(t.svc.url, t.svc.ctx.installation.operatorToken!, LAGGING_SCENARIO, CHAIN);
    assert.ok(proxy.counts.receiptMisses >= 20, `receipts were missed (${proxy.counts.receiptMisses})`);
    await assertChainAgrees(t.svc.ctx.db, node.url, w);
    await assertVerifyClean(cliEnv(), CHAIN);
  });

  it('30 % of receipts missing, heads and nonces from 3 s ago: every record as the chain shows it', async () => {
    proxy.plan = { receiptMissRate: 0.3, staleRate: 0.5, staleMs: 3000 };
    second.plan = { receiptMissRate: 0.5, staleRate: 1, staleMs: 5000 };
    const w = await runWorkload(t.svc.url, t.svc.ctx.installation.operatorToken!, LAGGING_SCENARIO, CHAIN);
    assert.ok(proxy.counts.staleAnswers > 20, `stale answers were given (${proxy.counts.staleAnswers})`);
    await assertChainAgrees(t.svc.ctx.db, node.url, w);
    await assertVerifyClean(cliEnv(), CHAIN);
  });
});
