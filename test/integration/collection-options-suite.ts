// Collection options and batch creates against a real service (HTTP + workers + embedded anvil), once
// per database: a soulbound collection (mint, the API's and the contract's refusal of a transfer,
// locked(id), burn), royalties and the contract document (royaltyInfo, contractURI, a change through
// PATCH with its ContractURIUpdated event), and POST /asset/batch (per-item answers in order, every
// accepted item minted once, the Idempotency-Key replaying the answer).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, createWalletClient, encodeFunctionData, getAddress, http, parseAbi, parseAbiItem, type Address } from 'viem';
import { foundry } from 'viem/chains';
import { ApiClient, waitFor } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';

const collectionAbi = parseAbi([
  'function ownerOf(uint256) view returns (address)',
  'function locked(uint256) view returns (bool)',
  'function royaltyInfo(uint256, uint256) view returns (address, uint256)',
  'function contractURI() view returns (string)',
  'function supportsInterface(bytes4) view returns (bool)',
  'function transferFrom(address from, address to, uint256 id)',
  'error Soulbound(uint256 id)',
]);
const LOCKED = parseAbiItem('event Locked(uint256 tokenId)');
const CONTRACT_URI_UPDATED = parseAbiItem('event ContractURIUpdated()');
const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)');
const ZERO = '0x0000000000000000000000000000000000000000';

const assetBody = (user_uid: string, collection_uid: string, n: string) => ({
  user_uid,
  collection_uid,
  asset_external_id: `item-${n}-${Math.random().toString(36).slice(2)}`,
  data: { name: `Badge ${n}`, unique_name: false, image_url: 'https://example.com/badge.png', store_image_on_ipfs: false },
});

export function collectionOptionsSuite(db: 'sqlite' | 'postgres'): void {
  describe(`collection options and batch creates on ${db}`, () => {
    let t: TestService;
    let admin: ApiClient;
    let app: Awaited<ReturnType<TestService['newApp']>>;
    let user: string;
    const receiver = '0x00000000000000000000000000000000000000aa';

    before(async () => {
      t = await startTestService(db);
      admin = new ApiClient(`${t.svc.url}/admin/v1`, undefined, t.svc.ctx.installation.operatorToken);
      app = await t.newApp();
      user = (await app.api.post('/user', {})).body.data.uid;
    });
    after(async () => {
      await t?.stop();
    });

    const rpc = () => createPublicClient({ chain: foundry, transport: http(t.svc.chain!.rpcUrl), pollingInterval: 50 });
    const collectionOf = async (uid: string) => (await app.api.get(`/collection/${uid}`)).body.data;
    const deployed = (uid: string) =>
      waitFor('collection deployed', async () => ((await collectionOf(uid)).status === 'deployed' ? collectionOf(uid) : null), 60_000);
    const minted = (uid: string) =>
      waitFor('asset minted', async () => {
        const a = (await app.api.get(`/asset/${uid}`)).body.data;
        return a.is_minted ? a : null;
      });
    const documentAt = async (uri: string) => {
      const url = uri.startsWith('ipfs://') ? `${t.svc.url}/ipfs/${uri.slice(7)}` : uri;
      const res = await fetch(url);
      assert.equal(res.status, 200, url);
      return res.json();
    };

    describe('a soulbound collection with a royalty', () => {
      let collection: string;
      let contract: Address;
      let asset: { uid: string; token_id: number; owner_address: Address };

      it('is created with its options, which the Collection shows after the keys it had', async () => {
        const r = await admin.post(`/apps/${app.uid}/collections`, {
          name: 'Badges',
          symbol: 'BDG',
          soulbound: true,
          royalty_receiver: receiver.toUpperCase().replace('0X', '0x'),
          royalty_bps: 500,
          description: 'Earned, never sold',
          image_url: 'https://example.com/badges.png',
          external_url: 'https://example.com/badges',
        });
        assert.equal(r.status, 201, r.raw);
        collection = r.body.data.uid;
        const c = await deployed(collection);
        contract = c.contract_address;
        assert.deepEqual(Object.keys(c).slice(-4), ['royalty_receiver', 'royalty_bps', 'soulbound', 'contract_uri']);
        assert.equal(c.royalty_receiver, receiver, 'answered in lower case');
        assert.equal(c.royalty_bps, 500);
        assert.equal(c.soulbound, true);
        assert.match(c.contract_uri, new RegExp(`^${t.svc.url}/files/[0-9a-f]{64}$`), 'a development App keeps the document on the service');
        // The contract was deployed with them.
        assert.equal(
          await rpc().readContract({ address: contract, abi: collectionAbi, functionName: 'supportsInterface', args: ['0xb45a3c0e'] }),
          true,
          'ERC-5192',
        );
        assert.deepEqual(await rpc().readContract({ address: contract, abi: collectionAbi, functionName: 'royaltyInfo', args: [1n, 10_000n] }), [
          getAddress(receiver),
          500n,
        ]);
        assert.equal(await rpc().readContract({ address: contract, abi: collectionAbi, functionName: 'contractURI' }), c.contract_uri);
        assert.deepEqual(await documentAt(c.contract_uri), {
          name: 'Badges',
          description: 'Earned, never sold',
          image: 'https://example.com/badges.png',
          external_link: 'https://example.com/badges',
          seller_fee_basis_points: 500,
          fee_recipient: receiver,
        });
      });

      it('mints: the token is locked, with a Locked event', async () => {
        const r = await app.api.post('/asset', assetBody(user, collection, 'sb'));
        assert.equal(r.status, 201, r.raw);
        asset = await minted(r.body.data.uid);
        const id = BigInt(asset.token_id);
        assert.equal(await rpc().readContract({ address: contract, abi: collectionAbi, functionName: 'locked', args: [id] }), true);
        const locks = await rpc().getLogs({ address: contract, event: LOCKED, fromBlock: 0n });
        assert.deepEqual(
          locks.map((l) => l.args.tokenId),
          [id],
        );
      });

      it('the API refuses a transfer (400 asset_soulbound) and nothing changes', async () => {
        const r = await app.api.post('/transfer', { asset_uid: asset.uid, from_user_uid: user, to_address: receiver });
        assert.equal(r.status, 400, r.raw);
        assert.deepEqual(r.body.error, {
          type: 'client_error',
          detail: { code: 'asset_soulbound', message: 'The asset belongs to a soulbound collection: it can be burned, never transferred.' },
        });
        const a = (await app.api.get(`/asset/${asset.uid}`)).body.data;
        assert.equal(a.is_transferring, false);
        assert.equal(a.owner_user_uid, user);
        assert.deepEqual((await app.api.get(`/transfer?user_uid=${user}`)).body.data, []);
      });

      it('the contract refuses a transfer forced on chain by the owner itself', async () => {
        const owner = t.svc.ctx.keys.user(user);
        assert.equal(owner.address.toLowerCase(), asset.owner_address);
        await rpc().request({ method: 'anvil_setBalance', params: [owner.address, '0xde0b6b3a7640000'] } as never);
        const args = [owner.address, receiver, BigInt(asset.token_id)] as const;
        await assert.rejects(
          rpc().simulateContract({ address: contract, abi: collectionAbi, functionName: 'transferFrom', args, account: owner.address }),
          /Soulbound/,
        );
        const wallet = createWalletClient({ account: owner, chain: foundry, transport: http(t.svc.chain!.rpcUrl) });
        const hash = await wallet.writeContract({ address: contract, abi: collectionAbi, functionName: 'transferFrom', args, gas: 200_000n });
        assert.equal((await rpc().waitForTransactionReceipt({ hash })).status, 'reverted');
        assert.equal(
          (await rpc().readContract({ address: contract, abi: collectionAbi, functionName: 'ownerOf', args: [BigInt(asset.token_id)] })).toLowerCase(),
          asset.owner_address,
        );
      });

      it('burns', async () => {
        const r = await app.api.post('/burn', { asset_uid: asset.uid, from_user_uid: user });
        assert.equal(r.status, 201, r.raw);
        await waitFor('burned', async () => (await app.api.get(`/asset/${asset.uid}`)).body.data.is_burned);
        await assert.rejects(rpc().readContract({ address: contract, abi: collectionAbi, functionName: 'ownerOf', args: [BigInt(asset.token_id)] }));
      });

      it('PATCH changes the royalty and the contract document; the contract follows with ContractURIUpdated', async () => {
        const before = await collectionOf(collection);
        const other = '0x00000000000000000000000000000000000000bb';
        const r = await admin.call('PATCH', `/apps/${app.uid}/collections/${collection}`, { royalty_receiver: other, royalty_bps: 250, description: null });
        assert.equal(r.status, 200, r.raw);
        assert.equal(r.body.data.royalty_receiver, other);
        assert.equal(r.body.data.royalty_bps, 250);
        assert.equal(r.body.data.description, null);
        assert.notEqual(r.body.data.contract_uri, before.contract_uri);
        assert.deepEqual(await documentAt(r.body.data.contract_uri), {
          name: 'Badges',
          image: 'https://example.com/badges.png',
          external_link: 'https://example.com/badges',
          seller_fee_basis_points: 250,
          fee_recipient: other,
        });
        await waitFor('contractURI set on chain', async () => {
          const uri = await rpc().readContract({ address: contract, abi: collectionAbi, functionName: 'contractURI' });
          return uri === r.body.data.contract_uri;
        });
        assert.deepEqual(await rpc().readContract({ address: contract, abi: collectionAbi, functionName: 'royaltyInfo', args: [7n, 10_000n] }), [
          getAddress(other),
          250n,
        ]);
        assert.equal((await rpc().getLogs({ address: contract, event: CONTRACT_URI_UPDATED, fromBlock: 0n })).length, 1);
        const audit = (await admin.get(`/audit?action=collection.updated&app_uid=${app.uid}`)).body.data;
        assert.equal(audit.length, 1);
      });

      it('PATCH refuses what a collection cannot have, and changes nothing', async () => {
        const before = await collectionOf(collection);
        const cases: [Record<string, unknown>, number, string][] = [
          [{ royalty_bps: 1001 }, 400, 'royalty_bps'],
          [{ royalty_receiver: '0x1234' }, 400, 'royalty_receiver'],
          [{ royalty_receiver: null }, 400, 'royalty_receiver'], // a rate without a receiver
          [{ soulbound: false }, 400, 'body'],
          [{ image_url: 'not a url' }, 400, 'image_url'],
        ];
        for (const [body, status, field] of cases) {
          const r = await admin.call('PATCH', `/apps/${app.uid}/collections/${collection}`, body);
          assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.raw}`);
          assert.equal(r.body.error.type, 'validation_error');
          const detail = [r.body.error.detail].flat()[0];
          assert.equal(detail.field_name ?? 'body', field, r.raw);
        }
        assert.equal((await admin.call('PATCH', `/apps/${app.uid}/collections/999999999999`, { royalty_bps: 1 })).status, 404);
        const another = await t.newApp();
        assert.equal((await admin.call('PATCH', `/apps/${another.uid}/collections/${collection}`, { royalty_bps: 1 })).status, 404, "another App's collection");
        assert.deepEqual(await collectionOf(collection), before);
      });

      it('creation refuses a royalty without its rate, a rate over 1000, and options an ERC-1155 collection cannot have', async () => {
        const bad = [
          { royalty_receiver: receiver },
          { royalty_receiver: receiver, royalty_bps: 1001 },
          { royalty_bps: 100 },
          { standard: 'ERC1155', soulbound: true }, // the items contract has no soulbound tokens, nor royalties
          { standard: 'ERC1155', royalty_receiver: receiver, royalty_bps: 100 },
        ];
        const count = async () => (await admin.get(`/apps/${app.uid}/collections`)).body.data.length;
        const n = await count();
        for (const options of bad) {
          const r = await admin.post(`/apps/${app.uid}/collections`, { name: 'Bad', symbol: 'BAD', ...options });
          assert.equal(r.status, 400, r.raw);
        }
        assert.equal(await count(), n);
      });
    });

    it('a production App keeps the contract document on IPFS; a collection without options has none on chain but the document', async () => {
      const prod = await t.newApp('production');
      const r = await admin.post(`/apps/${prod.uid}/collections`, { name: 'Plain', symbol: 'PLN' });
      const c = await waitFor(
        'deployed',
        async () => {
          const x = (await prod.api.get(`/collection/${r.body.data.uid}`)).body.data;
          return x.status === 'deployed' ? x : null;
        },
        60_000,
      );
      assert.equal(c.soulbound, false);
      assert.equal(c.royalty_receiver, null);
      assert.equal(c.royalty_bps, null);
      assert.match(c.contract_uri, /^ipfs:\/\/bafkrei[a-z2-7]+$/);
      assert.deepEqual(await documentAt(c.contract_uri), { name: 'Plain', seller_fee_basis_points: 0, fee_recipient: ZERO });
      assert.equal(await rpc().readContract({ address: c.contract_address, abi: collectionAbi, functionName: 'contractURI' }), c.contract_uri);
      assert.deepEqual(await rpc().readContract({ address: c.contract_address, abi: collectionAbi, functionName: 'royaltyInfo', args: [1n, 10_000n] }), [
        ZERO,
        0n,
      ]);
    });

    describe('POST /asset/batch', () => {
      let collection: string;
      before(async () => {
        collection = await t.newCollection(app.uid, false);
      });

      it('100 items with 3 bad ones: 97 uids and 3 errors in order; all 97 minted once; the same Idempotency-Key replays the answer', async () => {
        const assets: Record<string, unknown>[] = Array.from({ length: 100 }, (_, i) => assetBody(user, collection, `b${i}`));
        assets[10] = { ...assets[10], data: { ...(assets[10].data as object), name: undefined } }; // no name
        assets[50] = { ...assets[50], collection_uid: '999999999999' }; // no such collection
        assets[75] = { ...assets[75], asset_external_id: assets[5].asset_external_id }; // a duplicate within the batch
        const key = `batch-${Math.random().toString(36).slice(2)}`;
        const send = () => app.api.call('POST', '/asset/batch', { assets }, { 'Idempotency-Key': key });
        const r = await send();
        assert.equal(r.status, 201, r.raw);
        const data: ({ uid: string } | { error: { code: string; message: string } })[] = r.body.data;
        assert.equal(data.length, 100);
        assert.deepEqual(data[10], { error: { code: 'required', message: 'data.name: This field is required.' } });
        assert.deepEqual(data[50], { error: { code: 'not_found', message: 'Collection not found.' } });
        assert.deepEqual(data[75], { error: { code: 'asset_external_id_exists', message: 'Asset with this asset_external_id already exists' } });
        const uids = data.flatMap((d, i) => ('uid' in d ? [[i, d.uid] as const] : []));
        assert.equal(uids.length, 97);
        for (const [i, d] of data.entries()) if (![10, 50, 75].includes(i)) assert.match((d as { uid: string }).uid, /^\d{12}$/, `item ${i}`);
        assert.equal(new Set(uids.map(([, u]) => u)).size, 97);

        // Replayed: the same answer, and nothing created again.
        const again = await send();
        assert.equal(again.status, 201);
        assert.equal(again.headers.get('idempotent-replayed'), 'true');
        assert.equal(again.raw, r.raw);

        // Each accepted item is the asset it asked for, minted once.
        const assetsNow = await Promise.all(uids.map(([, uid]) => minted(uid)));
        for (const [k, a] of assetsNow.entries()) assert.equal(a.asset_external_id, assets[uids[k][0]].asset_external_id);
        const rows = await t.svc.ctx.db.selectFrom('assets').select(['uid', 'token_id']).where('collection_uid', '=', collection).execute();
        assert.equal(rows.length, 97, 'one asset per accepted item');
        const contract = (await collectionOf(collection)).contract_address;
        const mints = await rpc().getLogs({ address: contract, event: TRANSFER, args: { from: ZERO }, fromBlock: 0n });
        assert.equal(mints.length, 97, 'one mint per accepted item on chain');
        assert.deepEqual(new Set(mints.map((l) => Number(l.args.tokenId))), new Set(assetsNow.map((a) => a.token_id)));
      });

      it('400 only for a wrong envelope, and nothing is created', async () => {
        const before = await t.svc.ctx.db
          .selectFrom('assets')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow();
        const bodies = [{}, { assets: 'x' }, { assets: [] }, { assets: Array.from({ length: 101 }, (_, i) => assetBody(user, collection, `o${i}`)) }];
        for (const body of bodies) {
          const r = await app.api.post('/asset/batch', body);
          assert.equal(r.status, 400, r.raw);
          assert.equal(r.body.error.type, 'validation_error');
          assert.equal([r.body.error.detail].flat()[0].field_name, 'assets');
        }
        const now = await t.svc.ctx.db
          .selectFrom('assets')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow();
        assert.equal(Number(now.n), Number(before.n));
      });

      it("items of another App's collection or user are not found; an item that is not an object is refused on its own", async () => {
        const other = await t.newApp();
        const r = await other.api.post('/asset/batch', { assets: [assetBody(user, collection, 'x1'), 7] });
        assert.equal(r.status, 201, r.raw);
        assert.deepEqual(r.body.data, [
          { error: { code: 'not_found', message: 'User not found.' } },
          { error: { code: 'invalid', message: 'Must be an object.' } },
        ]);
      });
    });

    // Last: it sends a transaction from a relayer behind the service's back.
    it("chain verify compares a collection's royalty and contract URI with its record", async () => {
      const app2 = await t.newApp();
      const created = await admin.post(`/apps/${app2.uid}/collections`, { name: 'Checked', symbol: 'CHK', royalty_receiver: receiver, royalty_bps: 100 });
      const uid = created.body.data.uid;
      const c = await waitFor(
        'deployed',
        async () => {
          const x = (await app2.api.get(`/collection/${uid}`)).body.data;
          return x.status === 'deployed' ? x : null;
        },
        60_000,
      );
      const chainId = t.svc.ctx.config.chains[0].id;
      const verify = async () => {
        const r = await admin.post(`/chains/${chainId}/verify`, { app_uid: app2.uid });
        assert.equal(r.status, 200, r.raw);
        return r.body.data.divergences.filter((d: any) => d.record.uid === uid).map((d: any) => [d.kind, d.field, d.recorded, d.on_chain]);
      };
      assert.deepEqual(await verify(), []);
      // Someone with the contract's keys changes it on chain: the record no longer says what the chain does.
      const owner = await rpc().readContract({
        address: c.contract_address,
        abi: parseAbi(['function owner() view returns (address)']),
        functionName: 'owner',
      });
      await rpc().request({ method: 'anvil_impersonateAccount', params: [owner] } as never);
      const hash = await rpc().request({
        method: 'eth_sendTransaction',
        params: [
          {
            from: owner,
            to: c.contract_address,
            data: encodeFunctionData({
              abi: parseAbi(['function setCollectionInfo(address, uint96, string)']),
              functionName: 'setCollectionInfo',
              args: ['0x00000000000000000000000000000000000000bb', 900n, 'ipfs://elsewhere'],
            }),
          },
        ],
      } as never);
      await rpc().waitForTransactionReceipt({ hash: hash as `0x${string}` });
      await rpc().request({ method: 'anvil_stopImpersonatingAccount', params: [owner] } as never);
      assert.deepEqual(await verify(), [
        ['collection_royalty', 'royalty_receiver', receiver, '0x00000000000000000000000000000000000000bb'],
        ['collection_royalty', 'royalty_bps', 100, 900],
        ['contract_uri', 'contract_uri', c.contract_uri, 'ipfs://elsewhere'],
      ]);
    });
  });
}
