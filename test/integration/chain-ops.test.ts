// The operator's chain tools and alerts, against an external anvil (1 s blocks) served through two
// providers (a proxy in front, then the node itself): /admin/v1/chains and `mintworks chain …` show
// the chain; a stuck mint is cancelled (its job fails as cancelled, its nonce is filled, nothing is
// minted); low balances, a stuck transaction and a provider that is down reach ALERT_WEBHOOK_URL,
// signed, once per crossing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { formatUnits } from '../../src/domain/amounts.js';
import { promisify } from 'node:util';
import { createPublicClient, http as viemHttp, parseAbi, type Address } from 'viem';
import { startExternalNode, type ExternalNode } from '../helpers/external-node.js';
import { RpcFaultProxy } from '../helpers/rpc-fault-proxy.js';
import { startOnExternalChain, TEST_FUNDS, type TestService } from '../helpers/service.js';
import { ApiClient, waitFor } from '../helpers/env.js';
import { verifyOurSignature } from '../../src/util/webhook-signing.js';

const CHAIN = 80002;
const SECRET = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
const LOW_WEI = 50n * 10n ** 18n;
const run = promisify(execFile);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

interface Alert {
  alert: string;
  alert_id: string;
  attempt: number;
  data: Record<string, any>;
  verified: boolean;
}

describe('chain operator tools and alerts', () => {
  let node: ExternalNode;
  let proxy: RpcFaultProxy;
  let t: TestService;
  let admin: ApiClient;
  let receiver: http.Server;
  const alerts: Alert[] = [];
  /** Deliveries of these kinds to refuse (HTTP 500), one per count. */
  const refuse = new Map<string, number>();
  let env: Record<string, string>;

  before(async () => {
    receiver = http.createServer(async (req, res) => {
      let body = '';
      for await (const c of req) body += c;
      const j = JSON.parse(body);
      if ((refuse.get(j.alert) ?? 0) > 0) {
        refuse.set(j.alert, refuse.get(j.alert)! - 1);
        return void res.writeHead(500).end();
      }
      const verified = verifyOurSignature(
        String(req.headers['x-webhook-signature']),
        SECRET,
        String(req.headers['webhook-id']),
        Number(req.headers['webhook-timestamp']),
        body,
      );
      alerts.push({ ...j, verified });
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    node = await startExternalNode({ kind: 'anvil', chainId: CHAIN, blockTimeS: 1 });
    proxy = await RpcFaultProxy.start(node.url, {}, { dropMethod: node.dropMethod });
    const chain = { id: CHAIN, name: 'Amoy', rpc: [proxy.url, node.url], rpcTimeoutMs: 1000, lowBalanceWei: LOW_WEI.toString() };
    env = {
      CHAIN_STUCK_SECONDS: '3',
      ALERT_WEBHOOK_URL: `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/alerts`,
      ALERT_WEBHOOK_SECRET: SECRET,
      OUTBOUND_ALLOW_PRIVATE: 'true',
    };
    t = await startOnExternalChain('sqlite', chain, node.fund, env);
    env = { ...env, EMBEDDED_CHAIN: 'false', CHAINS: JSON.stringify([chain]), DATA_DIR: t.dataDir, LOG_LEVEL: 'silent' };
    admin = new ApiClient(`${t.svc.url}/admin/v1`, undefined, t.svc.ctx.installation.operatorToken);
  });
  after(async () => {
    await t?.stop();
    await proxy?.stop();
    await node?.stop();
    receiver?.close();
  });

  const cli = async (...args: string[]) =>
    JSON.parse((await run(process.execPath, [path.join(root, 'bin/mintworks.js'), ...args, '--json'], { env: { ...process.env, ...env } })).stdout);

  it('/admin/v1/chains and `mintworks chain status` show head, base fee, providers and relayers; requests are validated', async () => {
    const all = await admin.get('/chains');
    assert.equal(all.status, 200, all.raw);
    const c = all.body.data[0];
    assert.equal(c.chain_id, CHAIN);
    assert.ok(c.head > 0);
    assert.equal(typeof c.base_fee_gwei, 'number');
    assert.equal(c.max_fee_gwei, 1000, 'the default ceiling (CHAIN_MAX_FEE_GWEI)');
    assert.equal(c.low_balance_wei, LOW_WEI.toString());
    assert.deepEqual(
      c.providers.map((p: any) => p.provider),
      [proxy.url, node.url],
    );
    const relayers = c.relayers.filter((r: any) => r.role === 'relayer');
    assert.equal(relayers.length, 2);
    assert.ok(relayers.every((r: any) => r.balance_wei === TEST_FUNDS.toString() && r.low === false && r.nonce !== null && r.in_flight === 0));
    const deployer = c.relayers.find((r: any) => r.role === 'deployer');
    assert.ok(deployer.nonce >= 1, 'the deployer deployed the forwarder');
    assert.equal((await admin.get(`/chains/${CHAIN}`)).body.data.chain_id, CHAIN);

    assert.equal((await admin.get('/chains/abc')).status, 400);
    const missing = await admin.get('/chains/5');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.detail.code, 'not_found');
    assert.equal((await admin.get(`/chains/${CHAIN}/transactions?limit=0`)).status, 400);
    assert.equal((await admin.post(`/chains/${CHAIN}/transactions/999999/cancel`)).status, 404);
    assert.equal((await new ApiClient(`${t.svc.url}/admin/v1`, undefined, 'wrong-token-wrong-token-wrong').get('/chains')).status, 401);

    const status = await cli('chain', 'status');
    assert.equal(status.chains[0].chain_id, CHAIN);
    assert.equal(status.chains[0].relayers.length, 3);
    // The text shows balances in the native currency, exact, as the console does (the JSON keeps wei).
    const text = (await run(process.execPath, [path.join(root, 'bin/mintworks.js'), 'chain', 'status'], { env: { ...process.env, ...env } })).stdout;
    const relayer = status.chains[0].relayers.find((r: { role: string }) => r.role === 'relayer');
    assert.match(text, new RegExp(`${formatUnits(BigInt(relayer.balance_wei)).replace('.', '\\.')} [A-Z]{2,}\\b`), text);
    assert.match(text, /low under \d+(\.\d+)? [A-Z]{2,}\b/, text);
    assert.doesNotMatch(text, /\bwei\b|\de[+-]\d/, text);
  });

  it('a stuck mint is listed and cancelled: its asset fails as cancelled, nothing is minted, its nonce is filled, the next mint goes through', async () => {
    const app = await t.newApp();
    const collection = await t.newCollection(app.uid, false);
    const user = (await app.api.post('/user', {})).body.data.uid;
    const asset = (data: string) =>
      app.api.post('/asset', {
        user_uid: user,
        collection_uid: collection,
        asset_external_id: data,
        data: { name: data, unique_name: false, image_url: 'https://example.com/c.png', store_image_on_ipfs: false },
      });
    // The wallet first (its own job), so the mint below is the only transaction held up.
    const warm = await asset('warm');
    await waitFor('first mint', async () => (await app.api.get(`/asset/${warm.body.data.uid}`)).body.data.is_minted, 30_000);

    await node.rpc('evm_setIntervalMining', [0]);
    await node.rpc('evm_setAutomine', [false]);
    const created = await asset('cancel-me');
    assert.equal(created.status, 201, created.raw);
    const row = await waitFor(
      'mint sent',
      async () =>
        t.svc.ctx.db
          .selectFrom('chain_txs')
          .selectAll()
          .where('kind', '=', 'asset.mint')
          .where('status', '=', 'sent')
          .where('chain_id', '=', CHAIN)
          .executeTakeFirst(),
      20_000,
    );

    const stuck = await waitFor(
      'listed as stuck',
      async () => {
        const r = await admin.get(`/chains/${CHAIN}/transactions?stuck=true`);
        return r.body.data.find((x: any) => x.id === row.id);
      },
      20_000,
      250,
    );
    assert.equal(stuck.kind, 'asset.mint');
    assert.equal(stuck.cancellable, true);
    const listed = await cli('chain', 'txs', '--stuck', '--chain', String(CHAIN));
    assert.ok(
      listed.transactions.some((x: any) => x.id === row.id),
      'the CLI lists it too',
    );
    assert.equal((await admin.get(`/chains/${CHAIN}`)).body.data.relayers.find((r: any) => r.address === row.from_address).in_flight, 1);

    let cancelled = await admin.post(`/chains/${CHAIN}/transactions/${row.id}/cancel`);
    // The sender may have just replaced it with higher fees (it is stuck): cancel what is there now.
    if (cancelled.status === 409 && cancelled.body.error.detail.code === 'changed')
      cancelled = await admin.post(`/chains/${CHAIN}/transactions/${row.id}/cancel`);
    assert.equal(cancelled.status, 200, cancelled.raw);
    assert.equal(cancelled.body.data.nonce, row.nonce);
    assert.equal(cancelled.body.data.broadcast, 'sent');
    assert.equal((await admin.get(`/chains/${CHAIN}/transactions`)).body.data.find((x: any) => x.id === row.id).cancelling, true, 'listed as cancelling');
    // The cancel is in the audit log, with who did it and what it replaced.
    const audited = await t.svc.ctx.db.selectFrom('audit_log').selectAll().where('action', '=', 'chain.tx_cancelled').execute();
    assert.equal(audited.length, 1);
    assert.equal(audited[0].actor, 'operator_token');
    assert.equal(JSON.parse(audited[0].details).tx, row.id);

    await node.rpc('evm_setIntervalMining', [1]);
    const failed = await waitFor(
      'the asset failed as cancelled',
      async () => {
        const a = (await app.api.get(`/asset/${created.body.data.uid}`)).body.data;
        return a.mint_error ? a : null;
      },
      30_000,
      250,
    );
    assert.equal(failed.is_minted, false);
    assert.match(failed.mint_error, /cancelled by the operator/);
    const done = await t.svc.ctx.db.selectFrom('chain_txs').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
    assert.equal(done.status, 'reverted');
    assert.equal(done.error, 'cancelled by the operator');
    const rpc = createPublicClient({ transport: viemHttp(node.url) });
    assert.ok((await rpc.getTransactionCount({ address: row.from_address as Address })) > row.nonce, 'the nonce is filled');
    const contract = (await app.api.get(`/collection/${collection}`)).body.data.contract_address as Address;
    const minted = await rpc.getContractEvents({
      address: contract,
      abi: parseAbi(['event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)']),
      eventName: 'Transfer',
      fromBlock: 0n,
    });
    assert.ok(!minted.some((l) => Number(l.args.tokenId) === failed.token_id), 'the cancelled token was never minted');
    // Cancelled once: a second cancel is refused (settled), and nothing mints it again.
    const again = await admin.post(`/chains/${CHAIN}/transactions/${row.id}/cancel`);
    assert.equal(again.status, 409, again.raw);
    const next = await asset('after-cancel');
    await waitFor('the next mint', async () => (await app.api.get(`/asset/${next.body.data.uid}`)).body.data.is_minted, 30_000);
    assert.equal((await app.api.get(`/asset/${created.body.data.uid}`)).body.data.is_minted, false);

    // The stuck transaction was reported to the operator once.
    const stuckAlerts = await waitFor(
      'tx_stuck alert',
      async () => {
        const x = alerts.filter((a) => a.alert === 'chain.tx_stuck' && a.data.tx === row.id);
        return x.length ? x : null;
      },
      20_000,
    );
    assert.equal(stuckAlerts.length, 1);
    assert.ok(stuckAlerts[0].verified, 'signed with ALERT_WEBHOOK_SECRET');
  });

  it("`mintworks chain resync` reports each account's nonces; a next nonce is never left below the chain's", async () => {
    const relayer = t.svc.runtimes[0].sender.relayers[1].address;
    // The account used outside Mintworks: the chain is ahead of what Mintworks recorded.
    await node.rpc('anvil_impersonateAccount', [relayer]);
    await node.rpc('eth_sendTransaction', [{ from: relayer, to: relayer, value: '0x0' }]);
    await node.rpc('anvil_stopImpersonatingAccount', [relayer]);
    const rpc = createPublicClient({ transport: viemHttp(node.url) });
    const chainNonce = await waitFor(
      'mined',
      async () => {
        const n = await rpc.getTransactionCount({ address: relayer, blockTag: 'latest' });
        const pending = await rpc.getTransactionCount({ address: relayer, blockTag: 'pending' });
        return n === pending ? n : null;
      },
      10_000,
    );
    const r = await cli('chain', 'resync', '--chain', String(CHAIN));
    const resynced = await t.svc.ctx.db.selectFrom('audit_log').select(['actor', 'chain_id']).where('action', '=', 'chain.resynced').execute();
    assert.ok(
      resynced.some((e) => e.actor === 'cli' && Number(e.chain_id) === CHAIN),
      'the resync is in the audit log',
    );
    const mine = r.accounts.find((x: any) => x.address === relayer.toLowerCase());
    assert.equal(mine.pending_nonce, chainNonce);
    assert.ok(mine.next_nonce >= chainNonce && mine.next_nonce >= mine.next_nonce_before);
    const bad = await run(process.execPath, [path.join(root, 'bin/mintworks.js'), 'chain', 'resync', '--chain', '5'], {
      env: { ...process.env, ...env },
    }).catch((e) => e);
    assert.equal(bad.code, 2, 'an unknown chain is a usage error');
    assert.match(bad.stderr, /Chain 5 not found/);
  });

  it('a relayer under the threshold: /health and /metrics say low, one signed alert per crossing, retried until delivered', async () => {
    const relayer = t.svc.runtimes[0].sender.relayers[0].address;
    // (Before it was funded at the start, the relayer was low once already.)
    const earlier = alerts.filter((a) => a.alert === 'relayer.balance_low' && a.data.relayer === relayer).length;
    assert.equal(earlier, 1, 'the unfunded relayer at the start was reported once');
    const lowAlerts = () => alerts.filter((a) => a.alert === 'relayer.balance_low' && a.data.relayer === relayer).slice(earlier);
    refuse.set('relayer.balance_low', 1); // the first delivery fails: the alert is sent again
    await node.fund(relayer, 10n ** 18n);
    const [first] = await waitFor('low-balance alert', async () => (lowAlerts().length ? lowAlerts() : null), 30_000, 200);
    assert.ok(first.verified);
    assert.equal(first.attempt, 2, 'delivered by its second attempt');
    assert.equal(first.data.threshold_wei, LOW_WEI.toString());
    const h = await (await fetch(`${t.svc.url}/health`)).json();
    assert.equal(h.chains[0].accounts.find((a: any) => a.address === relayer).low, true);
    const metrics = await (await fetch(`${t.svc.url}/metrics`)).text();
    assert.match(metrics, new RegExp(`mintworks_relayer_balance_low\\{chain="${CHAIN}",relayer="${relayer}"\\} 1`));
    // Still low through later readings: no second alert.
    await t.svc.runtimes[0].refresh();
    await t.svc.runtimes[0].refresh();
    assert.equal(lowAlerts().length, 1);
    // Funded, then low again: a second crossing, a second alert.
    await node.fund(relayer, TEST_FUNDS);
    await t.svc.runtimes[0].refresh();
    await node.fund(relayer, 10n ** 18n);
    await t.svc.runtimes[0].refresh();
    await waitFor('second low-balance alert', async () => lowAlerts().length === 2, 20_000);
    await node.fund(relayer, TEST_FUNDS);
  });

  it('a provider that stays down is reported to the operator', async () => {
    await proxy.down();
    // This provider's alert (the other one may have been slow and reported once on a busy machine).
    const alert = await waitFor(
      'provider_down alert',
      async () => alerts.find((a) => a.alert === 'chain.provider_down' && a.data.provider === proxy.url),
      60_000,
      250,
    );
    assert.equal(alert.data.provider, proxy.url);
    assert.equal(alert.data.chain_id, CHAIN);
    assert.ok(alert.verified);
    // The chain works on through the other provider.
    const h = await (await fetch(`${t.svc.url}/health`)).json();
    assert.equal(h.chains[0].ready, true);
  });
});
