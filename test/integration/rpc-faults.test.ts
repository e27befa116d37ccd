// Mintworks behind JSON-RPC providers on a bad day: an external anvil producing a block a second (no
// mining on arrival, like a public chain), served through two fault-injecting proxies as the chain's
// two providers. A provider that is down or rate limited costs latency, never a mint; an answer of
// eth_sendRawTransaction that is lost after the node took the transaction never leads to a second
// transaction; a burst through flaky providers is minted exactly once.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, http, parseAbi, type Address } from 'viem';
import { startExternalNode, type ExternalNode } from '../helpers/external-node.js';
import { RpcFaultProxy } from '../helpers/rpc-fault-proxy.js';
import { startOnExternalChain, type TestService } from '../helpers/service.js';
import { waitFor, type ApiClient } from '../helpers/env.js';

const CHAIN = 80002;
const transferEvent = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)']);

describe('JSON-RPC providers with faults (two providers, anvil with 1 s blocks)', () => {
  let node: ExternalNode;
  let a: RpcFaultProxy;
  let b: RpcFaultProxy;
  let t: TestService;
  let api: ApiClient;
  let collection: string;
  let contract: Address;
  const users: string[] = [];

  before(async () => {
    node = await startExternalNode({ kind: 'anvil', chainId: CHAIN, blockTimeS: 1 });
    a = await RpcFaultProxy.start(node.url, {}, { seed: 11, dropMethod: node.dropMethod });
    b = await RpcFaultProxy.start(node.url, {}, { seed: 22, dropMethod: node.dropMethod });
    t = await startOnExternalChain('sqlite', { id: CHAIN, name: 'Amoy', rpc: [a.url, b.url], rpcTimeoutMs: 1000 }, node.fund, {
      CHAIN_STUCK_SECONDS: '20',
      MINT_BATCH_SIZE: '5',
    }); // small batches: many transactions, many sends to lose
    const app = await t.newApp();
    api = app.api;
    collection = await t.newCollection(app.uid, false);
    contract = (await api.get(`/collection/${collection}`)).body.data.contract_address;
    for (let i = 0; i < 10; i++) users.push((await api.post('/user', {})).body.data.uid);
  });
  after(async () => {
    await t?.stop();
    await a?.stop();
    await b?.stop();
    await node?.stop();
  });

  /** POSTs `n` assets, `concurrency` at a time, spread over the users; returns their uids. */
  async function burst(prefix: string, n: number, concurrency: number): Promise<string[]> {
    const uids: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let i = next++; i < n; i = next++) {
          const r = await api.post('/asset', {
            user_uid: users[i % users.length],
            collection_uid: collection,
            asset_external_id: `${prefix}-${i}`,
            data: { name: `${prefix} ${i}`, unique_name: false, image_url: 'https://example.com/a.png', store_image_on_ipfs: false },
          });
          assert.equal(r.status, 201, r.raw);
          uids.push(r.body.data.uid);
        }
      }),
    );
    return uids;
  }

  async function allMinted(uids: string[], timeoutMs: number): Promise<void> {
    await waitFor(
      `${uids.length} assets minted`,
      async () => {
        const rows = await t.svc.ctx.db.selectFrom('assets').select('mint_status').where('uid', 'in', uids).execute();
        const failed = rows.filter((r) => r.mint_status === 'failed').length;
        assert.equal(failed, 0, 'no mint failed');
        return rows.filter((r) => r.mint_status === 'minted').length === uids.length;
      },
      timeoutMs,
      250,
    );
  }

  /** Exactly once on chain: one Transfer from zero per token, no token twice, every asset's token among them; every recorded nonce used once. */
  async function exactlyOnce(uids: string[]): Promise<void> {
    const rpc = createPublicClient({ transport: http(node.url) });
    const logs = await rpc.getContractEvents({
      address: contract,
      abi: transferEvent,
      eventName: 'Transfer',
      args: { from: '0x0000000000000000000000000000000000000000' },
      fromBlock: 0n,
    });
    const ids = logs.map((l) => Number(l.args.tokenId));
    assert.equal(new Set(ids).size, ids.length, 'no token id minted twice');
    const assets = await t.svc.ctx.db.selectFrom('assets').select(['uid', 'token_id']).where('uid', 'in', uids).execute();
    for (const x of assets) assert.equal(ids.filter((id) => id === x.token_id).length, 1, `asset ${x.uid} (token ${x.token_id}) minted exactly once`);
    // Every recorded transaction of each relayer has a nonce of its own, and the chain used exactly those.
    for (const r of t.svc.runtimes[0].sender.relayers) {
      const rows = await t.svc.ctx.db
        .selectFrom('chain_txs')
        .select(['nonce', 'status'])
        .where('chain_id', '=', CHAIN)
        .where('from_address', '=', r.address.toLowerCase())
        .execute();
      assert.equal(new Set(rows.map((x) => x.nonce)).size, rows.length, 'one recorded transaction per nonce');
      assert.ok(
        rows.every((x) => x.status === 'mined'),
        'every recorded transaction mined',
      );
      assert.equal(await rpc.getTransactionCount({ address: r.address }), rows.length, `relayer ${r.address}: the chain saw exactly the recorded nonces`);
    }
  }

  const health = async () => (await (await fetch(`${t.svc.url}/health`)).json()) as any;
  const metric = async (name: string, labels: Record<string, string>) => {
    const text = await (await fetch(`${t.svc.url}/metrics`)).text();
    const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && want.every((w) => l.includes(w)));
    return line ? Number(line.split(' ').pop()) : 0;
  };

  it('a provider that is down: calls go to the other one, /health and /metrics say so, the primary is taken back when it answers', async () => {
    await a.down();
    const uids = await burst('down', 10, 5);
    await allMinted(uids, 60_000);
    await exactlyOnce(uids);
    const h = await health();
    const [pa, pb] = h.chains[0].providers;
    assert.match(pa.state, /degraded|down/);
    assert.match(pa.last_error, /connection/);
    assert.equal(pb.state, 'up');
    assert.ok(pb.calls > 0);
    assert.ok(
      (await metric('mintworks_chain_rpc_errors_total', { chain: String(CHAIN), provider: a.url, kind: 'connection' })) > 0,
      'connection errors of the primary counted',
    );
    assert.ok((await metric('mintworks_chain_rpc_calls_total', { chain: String(CHAIN), provider: b.url })) > 0, 'calls of the second provider counted');

    await a.up();
    await waitFor('the primary answering again', async () => (await health()).chains[0].providers[0].state === 'up', 60_000, 500);
  });

  it('a provider answering 429 with Retry-After is not called again before it; nothing is lost meanwhile', async () => {
    a.plan = { rate429: 1, retryAfterS: 2 };
    const from = a.log.length;
    const uids = await burst('limited', 10, 5);
    await allMinted(uids, 60_000);
    a.plan = {};
    const seen = a.log.slice(from);
    const limited = seen.filter((e) => e.outcome === '429');
    assert.ok(limited.length >= 1, 'the primary was asked and answered 429');
    // Calls already on their way when the first 429 came back arrive together; after such a wave, the
    // provider is not called again before its Retry-After (2 s).
    for (let i = 1; i < seen.length; i++) {
      const gap = seen[i].at - seen[i - 1].at;
      assert.ok(gap < 300 || gap >= 1900, `called again ${gap} ms after a 429 with Retry-After: 2`);
    }
    await exactlyOnce(uids);
    assert.ok((await metric('mintworks_chain_rpc_errors_total', { chain: String(CHAIN), provider: a.url, kind: 'http_429' })) >= limited.length);
  });

  it('lost eth_sendRawTransaction answers are resolved by hash: every asset minted once, no nonce used twice', async () => {
    a.plan = { loseSendRate: 0.5 };
    b.plan = { loseSendRate: 0.3 };
    const lostBefore = a.counts.lostSends + b.counts.lostSends;
    const uids = await burst('lost', 150, 16);
    await allMinted(uids, 90_000);
    a.plan = {};
    b.plan = {};
    const lost = a.counts.lostSends + b.counts.lostSends - lostBefore;
    assert.ok(lost >= 5, `answers were lost (${lost})`);
    // Each was resolved by asking for the transaction by its hash (nothing else asks for that).
    const lookups = [...a.log, ...b.log].filter((e) => e.method === 'eth_getTransactionByHash').length;
    assert.ok(lookups >= 1, 'lost answers looked up by hash');
    console.log(`lost answers: ${lost} of ${a.counts.sends + b.counts.sends} sends; lookups by hash: ${lookups}`);
    await exactlyOnce(uids);
  });

  it('a burst through flaky providers (latency, 429, hangs, lost answers, dropped transactions) is minted exactly once', async () => {
    const flaky = {
      latencyMs: [20, 80] as [number, number],
      rate429: 0.02,
      retryAfterS: 1,
      hangRate: 0.005,
      hangMs: 3000,
      loseSendRate: 0.02,
      dropTxRate: 0.05,
    };
    a.plan = flaky;
    b.plan = flaky;
    const t0 = Date.now();
    const uids = await burst('flaky', 300, 32);
    const accepted = Date.now() - t0;
    await allMinted(uids, 120_000);
    const drained = Date.now() - t0;
    a.plan = {};
    b.plan = {};
    const faults = (k: 'r429' | 'hangs' | 'lostSends' | 'droppedTxs') => a.counts[k] + b.counts[k];
    console.log(
      `flaky burst: 300 accepted in ${accepted} ms, all minted ${drained} ms after the first; faults: 429 ${faults('r429')}, hangs ${faults('hangs')}, lost sends ${faults('lostSends')}, dropped txs ${faults('droppedTxs')}`,
    );
    await exactlyOnce(uids);
  });
});
