// Two chains in one deployment: the embedded chain and a second anvil the test starts (chain 80002,
// "Amoy"), configured with CHAINS and funded by nobody. The service starts anyway; /health names the
// accounts to fund; once funded the chain becomes ready without a restart. Collections, mints, a
// transfer, an edit and a reward claim on both chains; a wallet per chain; deposits on the
// collection's chain; the second chain stopped for a while and started again, the embedded chain
// unaffected meanwhile and nothing lost.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pino from 'pino';
import { createPublicClient, http, parseAbi, type Address } from 'viem';
import { startEmbeddedChain, type EmbeddedChain } from '../../src/chain/anvil.js';
import { createApp } from '../../src/services/apps/registry.js';
import { signAppToken } from '../../src/services/apps/tokens.js';
import { ApiClient, freePort, tempDir, waitFor } from '../helpers/env.js';
import { mintTxIds } from '../helpers/chain-txs.js';
import { newAsset } from '../helpers/new-asset.js';
import { startTestService, type TestService } from '../helpers/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);
const erc721 = parseAbi(['function ownerOf(uint256) view returns (address)']);
const erc20 = parseAbi(['function balanceOf(address) view returns (uint256)']);
const AMOY = 80002;
const ONE_ETH = '0xde0b6b3a7640000';

export function multichainSuite(db: 'sqlite' | 'postgres') {
  describe(`two chains in one deployment on ${db}`, () => {
    let t: TestService;
    let amoy: EmbeddedChain;
    const amoyOptions = { dataDir: tempDir(), port: 0, chainId: AMOY, logger: pino({ level: 'silent' }) };
    let app: { uid: string; api: ApiClient; apiKey: string };
    let admin: ApiClient;
    let env: Record<string, string>;
    const rpcOf = (url: string) => createPublicClient({ transport: http(url) });
    const amoyRpc = () => rpcOf(amoy.rpcUrl);
    const health = async () => (await fetch(`${t.svc.url}/health`)).json() as Promise<any>;
    const chainHealth = async (id: number) => (await health()).chains.find((c: any) => c.chain_id === id);
    const cli = async (...args: string[]) =>
      (await run(process.execPath, [path.join(root, 'bin/mintworks.js'), ...args], { env: { ...process.env, ...env } })).stdout;
    const deployed = (uid: string, timeoutMs = 60_000) =>
      waitFor(
        `collection ${uid} deployed`,
        async () => {
          const c = (await app.api.get(`/collection/${uid}`)).body.data;
          return c.status === 'deployed' ? c : null;
        },
        timeoutMs,
      );
    const createAsset = (user: string, collection: string, id: string) => newAsset(app.api, user, collection, id);
    const minted = (uid: string, timeoutMs = 60_000) =>
      waitFor(
        `asset ${uid} minted`,
        async () => {
          const a = (await app.api.get(`/asset/${uid}`)).body.data;
          return a.is_minted ? a : null;
        },
        timeoutMs,
      );

    let user: string;
    let amoyCollection: string;
    let homeCollection: string;

    before(async () => {
      amoyOptions.port = await freePort();
      amoy = await startEmbeddedChain(amoyOptions);
      env = { CHAINS: JSON.stringify([{ id: AMOY, name: 'Amoy', rpc: amoy.rpcUrl }]) };
      t = await startTestService(db, env);
      env = { ...env, DATA_DIR: t.dataDir, ...(t.svc.ctx.config.databaseUrl ? { DATABASE_URL: t.svc.ctx.config.databaseUrl } : {}), LOG_LEVEL: 'silent' };
      const created = await createApp(t.svc.ctx, 'Two chains', 'development');
      app = {
        uid: created.uid,
        apiKey: created.api_key,
        api: new ApiClient(`${t.svc.url}/v1`, created.api_key, await signAppToken(created.api_key, created.api_secret)),
      };
      admin = new ApiClient(`${t.svc.url}/admin/v1`, undefined, t.svc.ctx.installation.operatorToken);
      user = (await app.api.post('/user', {})).body.data.uid;
    });
    after(async () => {
      await t?.stop();
      await amoy?.stop();
    });

    it('starts before the second chain is funded; /health names its accounts to fund', async () => {
      const h = await health();
      assert.equal(h.ready, true, 'the embedded (default) chain answers');
      assert.deepEqual(
        h.chains.map((c: any) => [c.chain_id, c.name, c.embedded]),
        [
          [31337, 'Anvil', true],
          [AMOY, 'Amoy', false],
        ],
      );
      const [home, second] = h.chains;
      assert.equal(home.ready, true);
      assert.equal(second.ready, false);
      assert.equal(typeof second.block, 'number');
      assert.deepEqual(Object.keys(second), [
        'chain_id',
        'name',
        'embedded',
        'ready',
        'block',
        'accounts',
        'status',
        'low_balance_wei',
        'providers',
        'awaiting_evidence',
      ]);
      assert.deepEqual(
        second.providers.map((p: any) => p.state),
        ['up'],
        'its one provider answers',
      );
      assert.deepEqual(
        second.accounts.map((a: any) => a.role),
        ['deployer', 'relayer', 'relayer'],
      );
      for (const a of second.accounts) {
        assert.deepEqual(Object.keys(a), ['address', 'role', 'balance_wei', 'low']);
        assert.equal(a.balance_wei, '0');
        assert.equal(a.low, true);
      }
      assert.match(second.status, /fund the deployer 0x[0-9a-fA-F]{40}/);
    });

    it('a collection for an unknown chain is refused in the envelope, naming chain_id, and nothing is written', async () => {
      const count = async () =>
        Number(
          (
            await t.svc.ctx.db
              .selectFrom('collections')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      const before = await count();
      const r = await admin.post(`/apps/${app.uid}/collections`, { name: 'Nowhere', symbol: 'NO', chain_id: 5 });
      assert.equal(r.status, 400, r.raw);
      assert.equal(r.body.success, false);
      assert.equal(r.body.error.type, 'validation_error');
      assert.equal(r.body.error.detail.field_name, 'chain_id');
      assert.match(r.body.error.detail.message, /Chain 5 is not served.*31337 \(Anvil\), 80002 \(Amoy\)/);
      const rr = await admin.post(`/apps/${app.uid}/rewards`, { name: 'X', token_name: 'X', token_symbol: 'X', supply: 1, chain_id: 5 });
      assert.equal(rr.status, 400, rr.raw);
      assert.equal(rr.body.error.detail.field_name, 'chain_id');
      await assert.rejects(
        cli('collection', 'create', '--app', app.uid, '--name', 'X', '--symbol', 'X', '--chain', 'abc', '--json'),
        (e: any) => e.code === 2 && /--chain <id>' argument 'abc' is invalid/.test(e.stdout),
      );
      await assert.rejects(
        cli('collection', 'create', '--app', app.uid, '--name', 'X', '--symbol', 'X', '--chain', '5', '--json'),
        (e: any) => e.code === 1 && /Chain 5 is not served/.test(e.stdout),
      );
      assert.equal(await count(), before);
    });

    it('the CLI creates a collection on 80002: it waits, unfunded, while the embedded chain works; funded, it deploys without a restart', async () => {
      amoyCollection = JSON.parse(
        await cli('collection', 'create', '--app', app.uid, '--name', 'Amoy Swords', '--symbol', 'ASW', '--editable', '--chain', String(AMOY), '--json'),
      ).uid;
      const c = (await app.api.get(`/collection/${amoyCollection}`)).body.data;
      assert.deepEqual([c.chain, c.network, c.chain_id, c.status], ['Amoy', 'Amoy', AMOY, 'deploying']);
      // The default chain is unaffected by the other one's state.
      homeCollection = (await admin.post(`/apps/${app.uid}/collections`, { name: 'Home Swords', symbol: 'HSW', editable_assets: true })).body.data.uid;
      const home = await deployed(homeCollection, 30_000);
      assert.deepEqual([home.chain, home.chain_id], ['Anvil', 31337]);
      assert.equal((await app.api.get(`/collection/${amoyCollection}`)).body.data.status, 'deploying', 'nothing is sent while the chain is unfunded');

      for (const a of (await chainHealth(AMOY)).accounts) await amoyRpc().request({ method: 'anvil_setBalance' as any, params: [a.address, ONE_ETH] as any });
      await waitFor('chain 80002 ready', async () => (await chainHealth(AMOY)).ready, 30_000);
      const d = await deployed(amoyCollection);
      assert.match(d.contract_address, /^0x[0-9a-f]{40}$/);
      assert.equal(((await amoyRpc().getCode({ address: d.contract_address })) ?? '0x').length > 2, true, 'the contract is on chain 80002');
      // A well-known chain id takes its explorer from viem's list when the entry names none.
      assert.equal(d.explorer_url, `https://amoy.polygonscan.com/address/${d.contract_address}`);
    });

    it('the console offers the chains and creates a collection on the one chosen', async () => {
      const consoleApi = new ApiClient(`${t.svc.url}/console/api`, undefined, t.svc.ctx.installation.operatorToken);
      assert.deepEqual((await consoleApi.get('/chains')).body.data, [
        { chain_id: 31337, name: 'Anvil' },
        { chain_id: AMOY, name: 'Amoy' },
      ]);
      const r = await consoleApi.post(`/apps/${app.uid}/collections`, { name: 'Console Amoy', symbol: 'CAM', chain_id: AMOY });
      assert.equal(r.status, 201, r.raw);
      assert.equal((await deployed(r.body.data.uid)).chain_id, AMOY);
    });

    it('assets mint on both chains to the user; a wallet per chain, each with its user.wallet_created', async () => {
      const [a1, a2] = [await createAsset(user, amoyCollection, 'amoy-1'), await createAsset(user, homeCollection, 'home-1')];
      const [m1, m2] = await Promise.all([minted(a1), minted(a2)]);
      const wallet = m1.owner_address as Address;
      assert.equal(m2.owner_address, wallet, 'the same derived address on both chains');
      const amoyContract = (await app.api.get(`/collection/${amoyCollection}`)).body.data.contract_address;
      assert.equal(
        (await amoyRpc().readContract({ address: amoyContract, abi: erc721, functionName: 'ownerOf', args: [BigInt(m1.token_id)] })).toLowerCase(),
        wallet,
      );
      const u = (await app.api.get(`/user/${user}`)).body.data;
      assert.deepEqual(
        u.wallets.map((w: any) => [w.chain_id, w.network, w.address]).sort((x: any, y: any) => x[0] - y[0]),
        [
          [31337, 'Anvil', wallet],
          [AMOY, 'Amoy', wallet],
        ],
      );
      for (const w of u.wallets) assert.deepEqual(Object.keys(w), ['address', 'explorer_url', 'network', 'chain_id']);
      const events = await t.svc.ctx.db
        .selectFrom('events')
        .select('payload')
        .where('app_uid', '=', app.uid)
        .where('type', '=', 'user.wallet_created')
        .execute();
      assert.equal(events.length, 2, 'one user.wallet_created per chain');
    });

    it('GET /deposit answers the collection chain', async () => {
      const other = (await app.api.post('/user', {})).body.data.uid;
      const d = (await app.api.get(`/deposit?user_uid=${other}&collection_uid=${amoyCollection}`)).body.data;
      assert.equal(d.chain_id, AMOY);
      assert.equal(d.network, 'Amoy');
      assert.match(d.qr_code_data, /^ethereum:0x[0-9a-f]{40}@80002$/);
      const h = (await app.api.get(`/deposit?user_uid=${other}&collection_uid=${homeCollection}`)).body.data;
      assert.deepEqual([h.chain_id, h.network], [31337, 'Anvil']);
      assert.match(h.qr_code_data, /@31337$/);
      // Without collection_uid: the default chain (the embedded one), not the other.
      const byDefault = (await app.api.get(`/deposit?user_uid=${other}`)).body.data;
      assert.deepEqual(byDefault, h);
      const wallets = (await app.api.get(`/user/${other}`)).body.data.wallets;
      assert.deepEqual(
        wallets.map((w: any) => w.chain_id),
        [AMOY, 31337],
        'deposit requests created the wallets, oldest first',
      );
    });

    it('a transfer and an edit on each chain', async () => {
      const to = '0x000000000000000000000000000000000000dEaD';
      for (const [collection, client] of [
        [amoyCollection, amoyRpc()],
        [homeCollection, rpcOf(t.svc.rpcUrl)],
      ] as const) {
        const a = await minted(await createAsset(user, collection, `xfer-${collection}`));
        const name = `Edited ${collection}`;
        const edit = await app.api.call('PUT', `/asset/${a.uid}`, { data: { name, unique_name: true, image_url: 'https://example.com/e.png' } });
        assert.equal(edit.status, 200, edit.raw);
        await waitFor(
          'edited',
          async () => {
            const x = (await app.api.get(`/asset/${a.uid}`)).body.data;
            return !x.is_editing && x.name === name;
          },
          60_000,
        );
        const editTx = await t.svc.ctx.db
          .selectFrom('chain_txs')
          .select(['chain_id', 'status'])
          .where('kind', '=', 'asset.edit')
          .where('ref', '=', a.uid)
          .executeTakeFirstOrThrow();
        assert.deepEqual([editTx.chain_id, editTx.status], [(await app.api.get(`/collection/${collection}`)).body.data.chain_id, 'mined']);
        const tr = await app.api.post('/transfer', { asset_uid: a.uid, from_user_uid: user, to_address: to });
        assert.equal(tr.status, 201, tr.raw);
        await waitFor('transferred', async () => (await app.api.get(`/transfer/${tr.body.data.uid}`)).body.data.status === 'done', 60_000);
        const contract = (await app.api.get(`/collection/${collection}`)).body.data.contract_address;
        assert.equal(
          (await client.readContract({ address: contract, abi: erc721, functionName: 'ownerOf', args: [BigInt(a.token_id)] })).toLowerCase(),
          to.toLowerCase(),
        );
      }
    });

    it('a reward on each chain: allocate and claim, paid on its own chain', async () => {
      for (const [chainId, client] of [
        [AMOY, amoyRpc()],
        [31337, rpcOf(t.svc.rpcUrl)],
      ] as const) {
        const created = await admin.post(`/apps/${app.uid}/rewards`, {
          name: `Gems ${chainId}`,
          token_name: 'Gem',
          token_symbol: 'GEM',
          supply: 100,
          chain_id: chainId,
        });
        assert.equal(created.status, 201, created.raw);
        const reward = await waitFor(
          'reward deployed',
          async () => {
            const r = (await app.api.get(`/reward/${created.body.data.uid}`)).body.data;
            return r.status === 'deployed' ? r : null;
          },
          60_000,
        );
        assert.deepEqual([reward.chain_id, reward.network], [chainId, chainId === AMOY ? 'Amoy' : 'Anvil']);
        const al = await app.api.post('/reward/allocate', { reward_uid: reward.uid, to_user_uid: user, amount: 7, nonce: `n-${chainId}` });
        assert.equal(al.status, 201, al.raw);
        await waitFor('allocated', async () => (await app.api.get(`/reward/allocate/${al.body.data.uid}`)).body.data.status === 'done', 60_000);
        const to = `0x${chainId.toString(16).padStart(40, '0')}` as Address;
        const claim = await app.api.post('/reward/claim', { reward_uid: reward.uid, from_user_uid: user, to_address: to });
        assert.equal(claim.status, 201, claim.raw);
        const done = await waitFor(
          'claimed',
          async () => {
            const c = (await app.api.get(`/reward/claim/${claim.body.data.uid}`)).body.data;
            return c.status === 'done' ? c : null;
          },
          60_000,
        );
        assert.equal(done.amount, 7);
        assert.equal(await client.readContract({ address: reward.contract_address, abi: erc20, functionName: 'balanceOf', args: [to] }), 7n * 10n ** 18n);
      }
    });

    it('the second chain stopped for a while: its mint waits, the embedded chain goes on; started again, nothing is lost', async () => {
      await amoy.stop(); // its state is saved and loaded again on restart
      await waitFor('chain 80002 reported down', async () => !(await chainHealth(AMOY)).ready, 20_000);
      const waiting = await createAsset(user, amoyCollection, 'during-outage');
      const t0 = Date.now();
      const home = await minted(await createAsset(user, homeCollection, 'home-during-outage'), 20_000);
      assert.ok(home.is_minted);
      const homeMs = Date.now() - t0;
      assert.ok(homeMs < 15_000, `the embedded chain's mint took ${homeMs} ms during the other chain's outage`);
      // The mint either waits as a job (no attempt spent) or was already signed and recorded, to be
      // broadcast once the node is back; it never fails.
      // Read while no worker holds it: a claim counts an attempt until the wait gives it back.
      const job = await waitFor(
        'the waiting mint job between runs',
        async () => {
          const j = await t.svc.ctx.db
            .selectFrom('jobs')
            .select(['status', 'attempts', 'last_error'])
            .where('ref', '=', waiting)
            .where('kind', '=', `asset.mint@${AMOY}`)
            .executeTakeFirst();
          return j && j.status !== 'running' ? j : null;
        },
        20_000,
        20,
      );
      assert.notEqual(job.status, 'failed');
      if (job.status === 'done') assert.ok((await mintTxIds(t.svc.ctx.db, [waiting])).has(waiting), 'a done mint job has put its asset in a transaction');
      else assert.equal(job.attempts, 0, `waiting spends no attempt (it failed with: ${job.last_error})`);
      assert.equal((await app.api.get(`/asset/${waiting}`)).body.data.is_minted, false);

      amoy = await startEmbeddedChain(amoyOptions); // back, same URL and state
      const m = await minted(waiting, 90_000);
      const amoyContract = (await app.api.get(`/collection/${amoyCollection}`)).body.data.contract_address;
      assert.equal(
        (await amoyRpc().readContract({ address: amoyContract, abi: erc721, functionName: 'ownerOf', args: [BigInt(m.token_id)] })).toLowerCase(),
        m.owner_address,
      );
      // Every asset of the App is minted, each once.
      const all = await t.svc.ctx.db.selectFrom('assets').select(['mint_status']).where('app_uid', '=', app.uid).execute();
      assert.ok(
        all.every((a) => a.mint_status === 'minted'),
        JSON.stringify(all),
      );
    });
  });
}
