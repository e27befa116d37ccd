// A transaction stuck behind a fee spike is replaced with higher fees (same nonce) and then mined:
// against an "external" anvil whose mining and base fee the test controls.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createPublicClient, http, parseAbi, type Address } from 'viem';
import { startEmbeddedChain, type EmbeddedChain } from '../../src/chain/anvil.js';
import { loadConfig } from '../../src/config/config.js';
import { startService, type Service } from '../../src/boot/service.js';
import { createApp } from '../../src/services/apps/registry.js';
import { createCollection } from '../../src/services/collections/collections.js';
import { signAppToken } from '../../src/services/apps/tokens.js';
import { ApiClient, freePort, tempDir, waitFor } from '../helpers/env.js';

const FUNDS = '0x56bc75e2d63100000'; // 100 ETH

describe('stuck transactions (CHAIN_RPC_URL)', () => {
  let chain: EmbeddedChain;
  let svc: Service;
  before(async () => {
    chain = await startEmbeddedChain({ dataDir: tempDir(), port: await freePort(), chainId: 31337, logger: pino({ level: 'silent' }) });
    const config = loadConfig({
      PORT: String(await freePort()),
      DATA_DIR: tempDir(),
      CHAIN_RPC_URL: chain.rpcUrl,
      LOG_LEVEL: 'silent',
      DEMO_APP: 'false',
      CHAIN_STUCK_SECONDS: '2',
    });
    // Fund the service's accounts on this "external" chain (the service does not do it there).
    const rpc = createPublicClient({ transport: http(chain.rpcUrl) });
    // It starts unfunded; once the deployer and relayers are funded the chain becomes ready.
    svc = await startService(config);
    for (const a of [svc.ctx.keys.deployer(), ...svc.ctx.sender!.relayers])
      await rpc.request({ method: 'anvil_setBalance' as any, params: [a.address, FUNDS] as any });
    await waitFor('the chain ready', async () => svc.runtimes[0].ready, 30_000);
  });
  after(async () => {
    await svc?.stop();
    await chain?.stop();
  });

  it('replaces a mint stuck below the base fee, and it is minted once', async () => {
    const rpc = createPublicClient({ transport: http(chain.rpcUrl) });
    const app = await createApp(svc.ctx, 'Stuck', 'development');
    const api = new ApiClient(`${svc.url}/v1`, app.api_key, await signAppToken(app.api_key, app.api_secret));
    const { uid: collection } = await createCollection(svc.ctx, app.uid, { name: 'S', symbol: 'S', editable: false });
    await waitFor('deployed', async () => (await api.get(`/collection/${collection}`)).body.data.status === 'deployed', 20_000);
    const user = (await api.post('/user', {})).body.data.uid;

    // Stop mining, send the mint into the pool, then let the base fee jump far above its max fee.
    await rpc.request({ method: 'evm_setIntervalMining' as any, params: [0] as any });
    await rpc.request({ method: 'evm_setAutomine' as any, params: [false] as any });
    const created = await api.post('/asset', {
      user_uid: user,
      collection_uid: collection,
      asset_external_id: 's1',
      data: { name: 'S', unique_name: false, image_url: 'https://example.com/s.png', store_image_on_ipfs: false },
    });
    assert.equal(created.status, 201, created.raw);
    const row = await waitFor(
      'mint recorded',
      async () => svc.ctx.db.selectFrom('chain_txs').selectAll().where('kind', '=', 'asset.mint').where('status', '=', 'sent').executeTakeFirst(),
      10_000,
    );
    await rpc.request({ method: 'anvil_setNextBlockBaseFeePerGas' as any, params: ['0x' + (500n * 10n ** 9n).toString(16)] as any });
    await rpc.request({ method: 'evm_mine' as any, params: [] as any });
    const base = (await rpc.getBlock()).baseFeePerGas!;
    assert.ok(base >= 400n * 10n ** 9n, `base fee ${base}`);
    assert.equal(
      (await svc.ctx.db.selectFrom('assets').select('mint_status').where('uid', '=', created.body.data.uid).executeTakeFirstOrThrow()).mint_status,
      'pending',
      'not mined below the base fee',
    );

    // Keep mining blocks: the stuck mint must be replaced with higher fees and then get in.
    const minted = await waitFor(
      'minted after replacement',
      async () => {
        await rpc.request({ method: 'evm_mine' as any, params: [] as any });
        const a = (await api.get(`/asset/${created.body.data.uid}`)).body.data;
        return a.is_minted ? a : null;
      },
      30_000,
      300,
    );
    const after = await svc.ctx.db.selectFrom('chain_txs').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
    assert.ok(after.bumps >= 1, 'replaced at least once');
    assert.ok((JSON.parse(after.prior_hashes) as string[]).includes(row.hash), 'the first hash is remembered');
    assert.equal(after.nonce, row.nonce, 'same nonce');
    const c = (await api.get(`/collection/${collection}`)).body.data.contract_address as Address;
    const mints = await rpc.getContractEvents({
      address: c,
      abi: parseAbi(['event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)']),
      eventName: 'Transfer',
      fromBlock: 0n,
    });
    assert.equal(mints.filter((l) => l.args.tokenId === BigInt(minted.token_id)).length, 1, 'minted exactly once');
  });
});
