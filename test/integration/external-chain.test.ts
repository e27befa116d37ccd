// Mintworks against an external chain (CHAIN_RPC_URL): here a separate anvil the service did not start
// and does not fund. Unfunded accounts are reported clearly instead of failing silently; a node that goes
// away for a while stops nothing: requests are accepted, and the work waits for it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createPublicClient, http } from 'viem';
import { startEmbeddedChain, type EmbeddedChain } from '../../src/chain/anvil.js';
import { loadConfig } from '../../src/config/config.js';
import { startService, type Service } from '../../src/boot/service.js';
import { ApiClient, freePort, tempDir, waitFor } from '../helpers/env.js';
import { mintTxIds } from '../helpers/chain-txs.js';
import { createApp } from '../../src/services/apps/registry.js';
import { createCollection } from '../../src/services/collections/collections.js';
import { signAppToken } from '../../src/services/apps/tokens.js';

describe('external chain (CHAIN_RPC_URL)', () => {
  let chain: EmbeddedChain;
  let svc: Service | null = null;
  const dataDir = tempDir();
  const chainOptions = { dataDir: tempDir(), port: 0, chainId: 31337, logger: pino({ level: 'silent' }) };
  before(async () => {
    chainOptions.port = await freePort();
    chain = await startEmbeddedChain(chainOptions);
  });
  after(async () => {
    await svc?.stop();
    await chain?.stop();
  });
  const config = async () =>
    loadConfig({ PORT: String(await freePort()), DATA_DIR: dataDir, CHAIN_RPC_URL: chain.rpcUrl, LOG_LEVEL: 'silent', DEMO_APP: 'false' });

  it('starts while the deployer has no gas; /health answers not ready, naming the account to fund', async () => {
    svc = await startService(await config());
    const res = await fetch(`${svc.url}/health`);
    const h = await res.json();
    // Not ready while the chain cannot deploy: the top level says so, and which account to fund.
    assert.equal(res.status, 503);
    assert.equal(h.ready, false);
    assert.match(h.status, new RegExp(`fund the deployer ${svc.ctx.keys.deployer().address}`));
    assert.equal(h.chain.embedded, false);
    assert.equal(h.chains.length, 1);
    assert.equal(h.chains[0].ready, false);
    assert.match(h.chains[0].status, new RegExp(`fund the deployer ${svc.ctx.keys.deployer().address}`));
    assert.ok(h.chains[0].accounts.every((a: any) => a.low === true && a.balance_wei === '0'));
  });

  it('with a funded deployer the forwarder is deployed without a restart, and /health reports the unfunded relayers', async () => {
    const rpc = createPublicClient({ transport: http(chain.rpcUrl) });
    await rpc.request({ method: 'anvil_setBalance' as any, params: [svc!.ctx.keys.deployer().address, '0xde0b6b3a7640000'] as any });
    const h = await waitFor(
      'the deployer funded and the forwarder deployed',
      async () => {
        const x = await (await fetch(`${svc!.url}/health`)).json();
        return /fund the relayers/.test(x.chains[0].status) ? x : null;
      },
      30_000,
    );
    assert.equal(h.ready, false);
    assert.match(h.status, /^fund the relayers 0x/);
    assert.ok(h.relayers.length >= 1 && h.relayers.every((r: any) => r.low === true && r.balance_wei === '0'));
    assert.notEqual((await rpc.getCode({ address: svc!.runtimes[0].forwarderAddress })) ?? '0x', '0x');
  });

  it('while the chain is down, requests are still accepted and mints wait (no attempt spent); they resume once it is back', async () => {
    const rpc = createPublicClient({ transport: http(chain.rpcUrl) });
    const h = await (await fetch(`${svc!.url}/health`)).json();
    for (const r of h.relayers) await rpc.request({ method: 'anvil_setBalance' as any, params: [r.address, '0xde0b6b3a7640000'] as any });
    await waitFor('ready once the relayers are funded', async () => (await fetch(`${svc!.url}/health`)).status === 200, 30_000);
    const app = await createApp(svc!.ctx, 'Outage', 'development');
    const api = new ApiClient(`${svc!.url}/v1`, app.api_key, await signAppToken(app.api_key, app.api_secret));
    const { uid: collection } = await createCollection(svc!.ctx, app.uid, { name: 'Outage', symbol: 'OUT', editable: false });
    await waitFor('collection deployed', async () => (await api.get(`/collection/${collection}`)).body.data.status === 'deployed', 30_000);
    const user = (await api.post('/user', {})).body.data.uid;

    await chain.stop(); // the node goes away (its state is kept)
    const created = await api.post('/asset', {
      user_uid: user,
      collection_uid: collection,
      asset_external_id: 'outage-1',
      data: { name: 'Outage', unique_name: false, image_url: 'https://example.com/o.png', store_image_on_ipfs: false },
    });
    assert.equal(created.status, 201, created.raw);
    const job = () =>
      svc!.ctx.db.selectFrom('jobs').select(['status', 'attempts', 'updated_at']).where('ref', '=', created.body.data.uid).executeTakeFirstOrThrow();
    // The mint job is tried while the node is down, and put back without spending attempts; or, when it
    // ran before the outage was noticed, its transaction is signed and recorded, waiting to be broadcast.
    const recorded = async () => (await mintTxIds(svc!.ctx.db, [created.body.data.uid])).size > 0;
    // One read of the job is judged whole: read again, it may be running its next try (a busy machine
    // gives the workers their turn between two reads), which counts an attempt until it is put back.
    const seen = await waitFor(
      'the mint tried during the outage',
      async () => {
        const j = await job();
        if (j.status === 'queued' && j.updated_at > Date.now() - 1000) return j;
        if (j.status === 'done' && (await recorded())) return j;
        return null;
      },
      20_000,
      100,
    );
    if (seen.status !== 'done') assert.equal(seen.attempts, 0);
    assert.equal((await api.get(`/asset/${created.body.data.uid}`)).body.data.is_minted, false);

    chain = await startEmbeddedChain(chainOptions); // back, same URL
    await waitFor('minted once the chain is back', async () => (await api.get(`/asset/${created.body.data.uid}`)).body.data.is_minted === true, 60_000, 200);
  });
});
