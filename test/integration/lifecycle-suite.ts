// Edit, transfer, burn and deposits, end to end over HTTP against the embedded chain.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, createWalletClient, getAddress, http, parseAbi, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { waitFor } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { embeddedChain, type SuiteChain } from '../helpers/suite-chain.js';

const erc721 = parseAbi([
  'function ownerOf(uint256) view returns (address)',
  'function tokenURI(uint256) view returns (string)',
  'function transferFrom(address from, address to, uint256 id)',
  'event MetadataUpdate(uint256 _tokenId)',
]);

/**
 * `opts.chain`: the chain the service runs on (default: the embedded one); `opts.env`: settings for the
 * service (e.g. KEY_CUSTODY=pkcs11, embedded chain only); `opts.more`: further tests that run on the same
 * service after these (before it stops).
 */
export function lifecycleSuite(
  db: 'sqlite' | 'postgres',
  opts: { chain?: SuiteChain; env?: Record<string, string>; title?: string; more?: (service: () => TestService) => void } = {},
): void {
  const chain = opts.chain ?? embeddedChain;
  describe(`asset lifecycle on ${db}${chain === embeddedChain ? '' : `, ${chain.name}`}${opts.title ? ` ${opts.title}` : ''}`, () => {
    let t: TestService;
    let app: Awaited<ReturnType<TestService['newApp']>>;
    let editable: string;
    let fixed: string;
    let contract: Address;
    const rpc = () => createPublicClient({ transport: http(chain.rpcUrl(t)) });
    const userWallets: Address[] = [];

    before(async () => {
      t = opts.env ? await startTestService(db, opts.env) : await chain.start(db);
      app = await t.newApp();
      [editable, fixed] = await Promise.all([t.newCollection(app.uid, true), t.newCollection(app.uid, false)]);
      contract = (await app.api.get(`/collection/${editable}`)).body.data.contract_address;
    });
    after(async () => {
      // The relayer pays all gas: no user wallet ever held a native balance.
      if (t) for (const w of userWallets) assert.equal(await rpc().getBalance({ address: w }), 0n, `user wallet ${w} holds no gas`);
      await t?.stop();
    });

    async function newUser(): Promise<{ uid: string; wallet: Address }> {
      const uid = (await app.api.post('/user', {})).body.data.uid;
      const wallet = (await app.api.get(`/deposit?user_uid=${uid}&collection_uid=${editable}`)).body.data.wallet_address as Address;
      userWallets.push(wallet);
      return { uid, wallet };
    }

    async function mintedAsset(user: string, collection = editable, data: Record<string, unknown> = {}) {
      const r = await app.api.post('/asset', {
        user_uid: user,
        collection_uid: collection,
        asset_external_id: `x-${Math.random().toString(36).slice(2)}`,
        data: {
          name: 'Blade',
          unique_name: false,
          image_url: 'https://example.com/b.png',
          store_image_on_ipfs: false,
          attributes: [{ trait_type: 'power', value: 1 }],
          ...data,
        },
      });
      assert.equal(r.status, 201, r.raw);
      return waitFor(
        'minted',
        async () => {
          const a = (await app.api.get(`/asset/${r.body.data.uid}`)).body.data;
          return a.is_minted ? a : null;
        },
        15_000,
      );
    }

    const asset = async (uid: string) => (await app.api.get(`/asset/${uid}`)).body.data;
    // Lower case, as the API answers addresses.
    const ownerOf = (id: number, c: Address = contract) =>
      rpc()
        .readContract({ address: c, abi: erc721, functionName: 'ownerOf', args: [BigInt(id)] })
        .then((a) => a.toLowerCase());

    it('mint → edit → transfer out → deposit back → transfer to a user → burn → transfer refused', async () => {
      const alice = await newUser();
      const bob = await newUser();
      const a0 = await mintedAsset(alice.uid);

      // edit: all metadata replaced, attributes not sent are gone, token_uri serves the new document
      const head = await rpc().getBlockNumber();
      const edit = await app.api.call('PUT', `/asset/${a0.uid}`, {
        data: { name: 'Blade+', unique_name: true, image_url: 'https://example.com/b2.png', description: 'sharper' },
      });
      assert.equal(edit.status, 200, edit.raw);
      assert.deepEqual(edit.body, { success: true, data: null });
      const edited = await waitFor(
        'edited',
        async () => {
          const a = await asset(a0.uid);
          return !a.is_editing && a.name === 'Blade+' ? a : null;
        },
        15_000,
      );
      assert.deepEqual(edited.metadata, {
        name: 'Blade+',
        image: 'https://example.com/b2.png',
        org_image_url: 'https://example.com/b2.png',
        original_id: a0.uid,
        description: 'sharper',
      });
      assert.deepEqual(await (await fetch(edited.token_uri)).json(), edited.metadata);
      const updates = await rpc().getContractEvents({ address: contract, abi: erc721, eventName: 'MetadataUpdate', fromBlock: head });
      assert.ok(
        updates.some((u) => u.args._tokenId === BigInt(a0.token_id)),
        'ERC-4906 MetadataUpdate emitted',
      );

      // transfer to an outside address
      const outside = privateKeyToAccount(generatePrivateKey());
      const tr = await app.api.post('/transfer', { asset_uid: a0.uid, from_user_uid: alice.uid, to_address: outside.address });
      assert.equal(tr.status, 201, `${tr.raw} alice=${alice.uid} ${alice.wallet} asset=${JSON.stringify(await asset(a0.uid))}`);
      const during = await asset(a0.uid);
      if (during.is_transferring) assert.equal(during.is_transferable, false);
      await waitFor('transfer done', async () => (await app.api.get(`/transfer/${tr.body.data.uid}`)).body.data.status === 'done', 15_000);
      const out = await asset(a0.uid);
      assert.equal(out.owner_user_uid, null);
      assert.equal(out.owner_address, outside.address.toLowerCase());
      assert.equal(out.is_transferable, false);
      assert.equal(out.is_transferring, false);
      assert.equal(await ownerOf(a0.token_id), outside.address.toLowerCase());
      const trv = (await app.api.get(`/transfer/${tr.body.data.uid}`)).body.data;
      assert.deepEqual(Object.keys(trv), ['uid', 'asset_uid', 'from_user_uid', 'to_address', 'created_at', 'status']);
      assert.deepEqual(
        (await app.api.get(`/transfer?user_uid=${alice.uid}`)).body.data.map((x: any) => x.uid),
        [tr.body.data.uid],
      );

      // the outside holder sends it back on chain: a deposit
      await chain.fund(t, outside.address, 10n ** 18n);
      const wallet = createWalletClient({
        account: outside,
        transport: http(chain.rpcUrl(t)),
        chain: {
          id: chain.chainId,
          name: chain.name,
          nativeCurrency: { name: 'ETH', symbol: 'ETH', decimals: 18 },
          rpcUrls: { default: { http: [chain.rpcUrl(t)] } },
        },
      });
      const hash = await wallet.writeContract({
        address: contract,
        abi: erc721,
        functionName: 'transferFrom',
        args: [outside.address, alice.wallet, BigInt(a0.token_id)],
      });
      await rpc().waitForTransactionReceipt({ hash });
      const sentAt = Date.now();
      const back = await waitFor(
        'deposit seen',
        async () => {
          const a = await asset(a0.uid);
          return a.owner_user_uid === alice.uid ? a : null;
        },
        5_000,
        100,
      );
      assert.ok(Date.now() - sentAt <= 5_000);
      assert.equal(back.is_transferable, true);
      assert.equal(back.owner_address, alice.wallet);

      // transfer to a second user of the App: that user owns it and it stays transferable
      const tr2 = await app.api.post('/transfer', { asset_uid: a0.uid, from_user_uid: alice.uid, to_address: bob.wallet.toLowerCase() });
      assert.equal(tr2.status, 201, tr2.raw);
      await waitFor('transfer 2 done', async () => (await app.api.get(`/transfer/${tr2.body.data.uid}`)).body.data.status === 'done', 15_000);
      const atBob = await asset(a0.uid);
      assert.equal(atBob.owner_user_uid, bob.uid);
      assert.equal(atBob.is_transferable, true);
      assert.deepEqual(
        (await app.api.get(`/asset?user_uid=${bob.uid}`)).body.data.map((x: any) => x.uid),
        [a0.uid],
      );
      assert.equal(await ownerOf(a0.token_id), bob.wallet);

      // bob burns it
      const burn = await app.api.post('/burn', { asset_uid: a0.uid, from_user_uid: bob.uid });
      assert.equal(burn.status, 201, burn.raw);
      await waitFor('burn done', async () => (await app.api.get(`/burn/${burn.body.data.uid}`)).body.data.status === 'done', 15_000);
      const burned = await asset(a0.uid);
      assert.equal(burned.is_burned, true);
      assert.equal(burned.is_transferable, false);
      await assert.rejects(ownerOf(a0.token_id));
      assert.deepEqual(Object.keys((await app.api.get(`/burn/${burn.body.data.uid}`)).body.data), [
        'uid',
        'asset_uid',
        'from_user_uid',
        'created_at',
        'status',
      ]);
      assert.deepEqual(
        (await app.api.get(`/burn?user_uid=${bob.uid}`)).body.data.map((x: any) => x.uid),
        [burn.body.data.uid],
      );

      const refused = await app.api.post('/transfer', { asset_uid: a0.uid, from_user_uid: bob.uid, to_address: outside.address });
      assert.equal(refused.status, 400);
      assert.deepEqual(refused.body.error, { type: 'client_error', detail: { code: 'asset_burned', message: 'Asset is burned.' } });
    });

    it('two concurrent transfers of one asset: exactly one 201', async () => {
      const u = await newUser();
      const a = await mintedAsset(u.uid);
      const to = privateKeyToAccount(generatePrivateKey()).address;
      const results = await Promise.all(Array.from({ length: 5 }, () => app.api.post('/transfer', { asset_uid: a.uid, from_user_uid: u.uid, to_address: to })));
      assert.deepEqual(results.map((r) => r.status).sort(), [201, 400, 400, 400, 400]);
      // Losers see the transfer in flight, or, on a fast chain, already done (the owner changed).
      for (const r of results.filter((x) => x.status === 400)) assert.ok(['asset_transferring', 'not_owner'].includes(r.body.error.detail.code), r.raw);
      await waitFor('transfer done', async () => (await asset(a.uid)).owner_address === to.toLowerCase(), 15_000);
      assert.equal(await ownerOf(a.token_id), to.toLowerCase());
    });

    it('a transfer and a burn racing for one asset: exactly one accepted', async () => {
      const u = await newUser();
      const a = await mintedAsset(u.uid);
      const [x, y] = await Promise.all([
        app.api.post('/transfer', { asset_uid: a.uid, from_user_uid: u.uid, to_address: privateKeyToAccount(generatePrivateKey()).address }),
        app.api.post('/burn', { asset_uid: a.uid, from_user_uid: u.uid }),
      ]);
      assert.deepEqual([x.status, y.status].sort(), [201, 400]);
    });

    it('edit on a non-editable collection: 400 client_error and nothing on chain', async () => {
      const u = await newUser();
      const a = await mintedAsset(u.uid, fixed);
      const fixedContract = (await app.api.get(`/collection/${fixed}`)).body.data.contract_address as Address;
      const txsBefore = await t.svc.ctx.db.selectFrom('chain_txs').select('id').where('kind', '=', 'asset.edit').execute();
      const r = await app.api.call('PUT', `/asset/${a.uid}`, { data: { name: 'New', unique_name: true, image_url: 'https://example.com/n.png' } });
      assert.equal(r.status, 400);
      assert.equal(r.body.error.type, 'client_error');
      assert.equal(r.body.error.detail.code, 'not_editable');
      const after = await asset(a.uid);
      assert.equal(after.name, a.name);
      assert.equal(after.is_editing, false);
      const txsAfter = await t.svc.ctx.db.selectFrom('chain_txs').select('id').where('kind', '=', 'asset.edit').execute();
      assert.equal(txsAfter.length, txsBefore.length);
      const updates = await rpc().getContractEvents({ address: fixedContract, abi: erc721, eventName: 'MetadataUpdate', fromBlock: 0n });
      assert.equal(updates.length, 0);
    });

    it('edit follows unique_name rules and validates like create', async () => {
      const u = await newUser();
      const a = await mintedAsset(u.uid, editable, { name: 'Unique-A', unique_name: true });
      const b = await mintedAsset(u.uid, editable, { name: 'Unique-B', unique_name: true });
      const clash = await app.api.call('PUT', `/asset/${b.uid}`, { data: { name: 'Unique-A', unique_name: true, image_url: 'https://example.com/n.png' } });
      assert.equal(clash.status, 400);
      assert.equal(clash.body.error.detail.message, 'Asset with this name already exists');
      // keeping its own name is fine
      assert.equal(
        (await app.api.call('PUT', `/asset/${a.uid}`, { data: { name: 'Unique-A', unique_name: true, image_url: 'https://example.com/n.png' } })).status,
        200,
      );
      const again = await app.api.call('PUT', `/asset/${a.uid}`, { data: { name: 'Unique-A', unique_name: true, image_url: 'https://example.com/n.png' } });
      if (again.status === 400) assert.equal(again.body.error.detail.code, 'asset_editing');
      const nonUnique = await app.api.call('PUT', `/asset/${b.uid}`, { data: { name: 'Plain', unique_name: false, image_url: 'https://example.com/n.png' } });
      assert.equal(nonUnique.status, 200);
      await waitFor('edited', async () => (await asset(b.uid)).name === `Plain #${b.token_id}`, 15_000);
      const bad = await app.api.call('PUT', `/asset/${a.uid}`, { data: { name: 'x', image_url: 'nope' } });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.type, 'validation_error');
      assert.equal(
        (await app.api.call('PUT', '/asset/999999999999', { data: { name: 'x', unique_name: true, image_url: 'https://e.com/x.png' } })).status,
        404,
      );
    });

    it('preconditions: not minted, not owner, transferring, unknown asset/user; to_address validated', async () => {
      const u = await newUser();
      const v = await newUser();
      const a = await mintedAsset(u.uid);
      const to = privateKeyToAccount(generatePrivateKey()).address;
      const notOwner = await app.api.post('/transfer', { asset_uid: a.uid, from_user_uid: v.uid, to_address: to });
      assert.deepEqual(notOwner.body.error, { type: 'client_error', detail: { code: 'not_owner', message: 'Asset is not owned by from_user_uid.' } });
      const burnNotOwner = await app.api.post('/burn', { asset_uid: a.uid, from_user_uid: v.uid });
      assert.equal(burnNotOwner.body.error.detail.code, 'not_owner');
      assert.equal((await app.api.post('/transfer', { asset_uid: '999999999999', from_user_uid: u.uid, to_address: to })).status, 404);
      assert.equal(
        (await app.api.post('/transfer', { asset_uid: a.uid, from_user_uid: '999999999999', to_address: to })).body.error.detail.message,
        'User not found.',
      );
      for (const bad of ['0x123', 'not-an-address', '0x0000000000000000000000000000000000000000', '0X0000000000000000000000000000000000000000', `${to}0`]) {
        const r = await app.api.post('/transfer', { asset_uid: a.uid, from_user_uid: u.uid, to_address: bad });
        assert.equal(r.status, 400, bad);
        assert.equal(r.body.error.type, 'validation_error', bad);
        assert.equal(r.body.error.detail.field_name, 'to_address');
      }
      // not minted yet: hold the mint back by creating the asset for a collection still deploying
      const { uid: deploying } = await (await import('../../src/services/collections/collections.js')).createCollection(t.svc.ctx, app.uid, {
        name: 'Later',
        symbol: 'LTR',
        editable: true,
      });
      const pending = await app.api.post('/asset', {
        user_uid: u.uid,
        collection_uid: deploying,
        asset_external_id: `p-${Date.now()}`,
        data: { name: 'P', unique_name: false, image_url: 'https://e.com/p.png', store_image_on_ipfs: false },
      });
      const early = await app.api.post('/transfer', { asset_uid: pending.body.data.uid, from_user_uid: u.uid, to_address: to });
      if ((await asset(pending.body.data.uid)).is_minted === false) {
        assert.equal(early.status, 400);
        assert.equal(early.body.error.detail.code, 'asset_not_minted');
      }
      // another App sees nothing
      const other = await t.newApp();
      assert.equal((await other.api.get(`/transfer/${notOwner.body?.data?.uid ?? '999999999999'}`)).status, 404);
      assert.deepEqual((await other.api.get(`/transfer?user_uid=${u.uid}`)).body.data, []);
      assert.equal(getAddress(to), to);
    });

    it('a transfer that fails on chain ends cancelled, says why, and the asset is transferable again; the indexer then reconciles', async () => {
      const u = await newUser();
      const a = await mintedAsset(u.uid);
      const outside = privateKeyToAccount(generatePrivateKey()).address;
      // Move the token on chain behind the service's back (the user's own signature, relayed by a
      // funded test account through the forwarder) while the indexer is paused, so the database still
      // believes the user owns it.
      await t.svc.indexer!.stop();
      const { signForwardRequest, encodeForwardBatch } = await import('../../src/chain/forward.js');
      const forwarder = t.svc.ctx.chains!.get(chain.chainId)!.forwarder;
      const userKey = t.svc.ctx.keys.user(u.uid);
      const fwdAbi = parseAbi(['function nonces(address) view returns (uint256)']);
      const nonce = await rpc().readContract({ address: forwarder, abi: fwdAbi, functionName: 'nonces', args: [userKey.address] });
      const { encodeFunctionData } = await import('viem');
      const req = await signForwardRequest(userKey, forwarder, chain.chainId, {
        to: contract,
        data: encodeFunctionData({ abi: erc721, functionName: 'transferFrom', args: [userKey.address, outside, BigInt(a.token_id)] }),
        gas: 150_000n,
        nonce,
        deadline: Math.floor(Date.now() / 1000) + 3600,
      });
      const funded = privateKeyToAccount(generatePrivateKey());
      await chain.fund(t, funded.address, 10n ** 18n);
      const w = createWalletClient({
        account: funded,
        transport: http(chain.rpcUrl(t)),
        chain: {
          id: chain.chainId,
          name: chain.name,
          nativeCurrency: { name: 'ETH', symbol: 'ETH', decimals: 18 },
          rpcUrls: { default: { http: [chain.rpcUrl(t)] } },
        },
      });
      await rpc().waitForTransactionReceipt({
        hash: await w.sendTransaction({ to: forwarder, data: encodeForwardBatch([req], funded.address), gas: 400_000n }),
      });
      assert.equal(await ownerOf(a.token_id), outside.toLowerCase());

      const tr = await app.api.post('/transfer', { asset_uid: a.uid, from_user_uid: u.uid, to_address: privateKeyToAccount(generatePrivateKey()).address });
      assert.equal(tr.status, 201, tr.raw);
      const cancelled = await waitFor(
        'transfer cancelled',
        async () => {
          const x = (await app.api.get(`/transfer/${tr.body.data.uid}`)).body.data;
          return x.status === 'cancelled' ? x : null;
        },
        15_000,
      );
      assert.match(cancelled.reason, /reverted on chain/);
      const back = await asset(a.uid);
      assert.equal(back.is_transferring, false);
      assert.equal(back.is_transferable, true, 'transferable again (as far as the service knew)');
      assert.equal(await ownerOf(a.token_id), outside.toLowerCase(), 'nothing moved');

      t.svc.indexer!.start();
      const reconciled = await waitFor(
        'indexer reconciles the owner',
        async () => {
          const x = await asset(a.uid);
          return x.owner_address === outside.toLowerCase() ? x : null;
        },
        10_000,
      );
      assert.equal(reconciled.owner_user_uid, null);
      assert.equal(reconciled.is_transferable, false);
    });

    it("editing a production App's asset stores a new IPFS document and sets the new token URI on chain", async () => {
      const prod = await t.newApp('production');
      const coll = await t.newCollection(prod.uid, true);
      const u = (await prod.api.post('/user', {})).body.data.uid;
      const created = await prod.api.post('/asset', {
        user_uid: u,
        collection_uid: coll,
        asset_external_id: 'p1',
        data: { name: 'Orb', unique_name: true, image_url: 'https://example.com/orb.png', store_image_on_ipfs: false },
      });
      assert.equal(created.status, 201, created.raw);
      const minted = await waitFor(
        'minted',
        async () => {
          const a = (await prod.api.get(`/asset/${created.body.data.uid}`)).body.data;
          return a.is_minted ? a : null;
        },
        15_000,
      );
      assert.match(minted.token_uri, /^ipfs:\/\//);
      assert.equal(
        (await prod.api.call('PUT', `/asset/${minted.uid}`, { data: { name: 'Orb II', unique_name: true, image_url: 'https://example.com/orb2.png' } })).status,
        200,
      );
      const edited = await waitFor(
        'edited',
        async () => {
          const a = (await prod.api.get(`/asset/${minted.uid}`)).body.data;
          return !a.is_editing && a.name === 'Orb II' ? a : null;
        },
        15_000,
      );
      assert.match(edited.token_uri, /^ipfs:\/\//);
      assert.notEqual(edited.token_uri, minted.token_uri);
      const c = (await prod.api.get(`/collection/${coll}`)).body.data.contract_address as Address;
      assert.equal(await rpc().readContract({ address: c, abi: erc721, functionName: 'tokenURI', args: [BigInt(minted.token_id)] }), edited.token_uri);
      const doc = await (await fetch(`${t.svc.url}/ipfs/${edited.token_uri.slice('ipfs://'.length)}`)).json();
      assert.deepEqual(doc, edited.metadata);
      assert.equal(doc.name, 'Orb II');
    });

    it('reading the whole chain again (as after a reorg) changes no owner and emits nothing', async () => {
      const snapshot = async () =>
        await t.svc.ctx.db
          .selectFrom('assets')
          .select(['uid', 'owner_address', 'owner_user_uid', 'is_burned'])
          .where('app_uid', '=', app.uid)
          .orderBy('uid')
          .execute();
      const events = async () =>
        Number(
          (
            await t.svc.ctx.db
              .selectFrom('events')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('app_uid', '=', app.uid)
              .executeTakeFirstOrThrow()
          ).n,
        );
      // Quiescent first: earlier tests may still have a mint (a collection that was deploying) in flight.
      await waitFor(
        'nothing in flight',
        async () => {
          const busy = await t.svc.ctx.db
            .selectFrom('assets')
            .select('uid')
            .where('app_uid', '=', app.uid)
            .where((eb) => eb.or([eb('mint_status', '=', 'pending'), eb('is_transferring', '=', 1), eb('is_burning', '=', 1), eb('is_editing', '=', 1)]))
            .executeTakeFirst();
          return !busy && (await t.svc.ctx.sender!.pendingCount()) === 0;
        },
        20_000,
      );
      const before = await snapshot();
      const eventsBefore = await events();
      const genesis = await rpc().getBlock({ blockNumber: 0n });
      await t.svc.ctx.db.updateTable('chain_cursors').set({ block_number: 0, block_hash: genesis.hash }).execute();
      const head = Number(await rpc().getBlockNumber());
      await waitFor(
        'indexer caught up',
        async () => {
          const c = await t.svc.ctx.db.selectFrom('chain_cursors').select('block_number').executeTakeFirst();
          return c && c.block_number >= head;
        },
        20_000,
      );
      assert.deepEqual(await snapshot(), before);
      assert.equal(await events(), eventsBefore);
    });

    opts.more?.(() => t);
  });
}
