// Items (docs/api.md, Items) on an ERC-1155 collection against a real service (HTTP + workers + embedded
// anvil), once per database: item types, mints of amounts batched per transaction, balances from the API
// and from balanceOf on chain, max supply, gasless transfers and burns, a deposit from outside, and the
// item.* events.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, createWalletClient, http, parseAbi, parseAbiItem, parseEther, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { ApiClient, waitFor } from '../helpers/env.js';
import type { TestService } from '../helpers/service.js';
import { embeddedChain } from '../helpers/suite-chain.js';
import { ITEM_MINT_JOB, kindOn } from '../../src/jobs/kinds.js';
import { mintsWaiting } from '../../src/services/collections/collections.js';
import { DEPLOYMENT_WAIT_MS } from '../../src/services/collections/contract-deploy.js';

const erc1155 = parseAbi([
  'function balanceOf(address, uint256) view returns (uint256)',
  'function uri(uint256) view returns (string)',
  'function maxSupply(uint256) view returns (uint256)',
  'function safeTransferFrom(address, address, uint256, uint256, bytes)',
  'function safeBatchTransferFrom(address, address, uint256[], uint256[], bytes)',
]);

type TestApp = Awaited<ReturnType<TestService['newApp']>>;

export function itemsSuite(db: 'sqlite' | 'postgres'): void {
  describe(`items (ERC-1155) on ${db}`, () => {
    let t: TestService;
    let app: TestApp;
    let other: TestApp;
    let admin: ApiClient;
    let collection: string;
    let contract: Address;
    let item: string;
    let tokenId: bigint;
    let userA: string;
    let userB: string;
    const rpc = () => createPublicClient({ chain: foundry, transport: http(t.svc.chain!.rpcUrl) });
    const walletOf = (user: string) => t.svc.ctx.keys.user(user).address;
    const onChain = (user: string) => rpc().readContract({ address: contract, abi: erc1155, functionName: 'balanceOf', args: [walletOf(user), tokenId] });
    const balance = async (user: string) => {
      const r = await app.api.get(`/item/balance?item_uid=${item}&user_uid=${user}`);
      assert.equal(r.status, 200, r.raw);
      return r.body.data.amount as number;
    };
    const newUser = async () => (await app.api.post('/user', {})).body.data.uid as string;
    const waitDone = (kind: 'mint' | 'transfer' | 'burn', uid: string) =>
      waitFor(
        `item ${kind} ${uid} done`,
        async () => {
          const r = await app.api.get(`/item/${kind}/${uid}`);
          assert.equal(r.status, 200, r.raw);
          if (r.body.data.status !== 'pending' && r.body.data.status !== 'done') throw new Error(`${kind} ${uid}: ${r.raw}`);
          return r.body.data.status === 'done' ? r.body.data : null;
        },
        60_000,
      );
    const eventsOf = async (type: string) =>
      (await t.svc.ctx.db.selectFrom('events').select('payload').where('app_uid', '=', app.uid).where('type', '=', type).execute()).map((e) =>
        JSON.parse(e.payload),
      );
    const mint = (user: string, amount: unknown, nonce: unknown) => app.api.post('/item/mint', { item_uid: item, to_user_uid: user, amount, nonce });

    before(async () => {
      t = await embeddedChain.start(db);
      [app, other] = await Promise.all([t.newApp(), t.newApp()]);
      admin = new ApiClient(`${t.svc.url}/admin/v1`, undefined, t.svc.ctx.installation.operatorToken);
      const c = await admin.post(`/apps/${app.uid}/collections`, { name: 'Potions', symbol: 'POT', standard: 'ERC1155', editable_assets: true });
      assert.equal(c.status, 201, c.raw);
      collection = c.body.data.uid;
      const deployed = await waitFor('collection deployed', async () => {
        const r = await app.api.get(`/collection/${collection}`);
        return r.body.data.status === 'deployed' ? r.body.data : null;
      });
      assert.equal(deployed.type, 'ERC1155');
      contract = deployed.contract_address;
      [userA, userB] = [await newUser(), await newUser()];
    });
    after(async () => {
      await t?.stop();
    });

    it('POST /item creates an item type with its token id; GET answers the Item object; nothing is on chain yet', async () => {
      const r = await app.api.post('/item', {
        collection_uid: collection,
        item_external_id: 'potion-heal',
        max_supply: 1000,
        data: {
          name: 'Healing potion',
          image_url: 'https://example.com/potion.png',
          store_image_on_ipfs: false,
          attributes: [{ trait_type: 'hp', value: 50 }],
        },
      });
      assert.equal(r.status, 201, r.raw);
      item = r.body.data.uid;
      const got = await app.api.get(`/item/${item}`);
      assert.equal(got.status, 200, got.raw);
      assert.deepEqual(Object.keys(got.body.data), [
        'uid',
        'collection_uid',
        'item_external_id',
        'token_id',
        'name',
        'token_uri',
        'max_supply',
        'minted_supply',
        'created_at',
        'metadata',
      ]);
      const d = got.body.data;
      tokenId = BigInt(d.token_id);
      assert.equal(d.max_supply, 1000);
      assert.equal(d.minted_supply, 0);
      assert.equal(d.metadata.name, 'Healing potion');
      assert.equal(d.token_uri, await rpc().readContract({ address: contract, abi: erc1155, functionName: 'uri', args: [tokenId] }));
      const doc = await fetch(d.token_uri);
      assert.equal(doc.status, 200);
      assert.equal(((await doc.json()) as { name: string }).name, 'Healing potion');
      assert.equal(
        await rpc().readContract({ address: contract, abi: erc1155, functionName: 'maxSupply', args: [tokenId] }),
        0n,
        'not fixed before the first mint',
      );
      const list = await app.api.get(`/item?collection_uid=${collection}`);
      assert.deepEqual(
        list.body.data.map((i: { uid: string }) => i.uid),
        [item],
      );
      // The same external id again, an ERC-721 collection, another App's item: refused.
      const dup = await app.api.post('/item', {
        collection_uid: collection,
        item_external_id: 'potion-heal',
        data: { name: 'x', image_url: 'https://example.com/x.png', store_image_on_ipfs: false },
      });
      assert.equal(dup.status, 400, dup.raw);
      assert.equal(dup.body.error.detail.code, 'item_external_id_exists');
      const erc721 = await admin.post(`/apps/${app.uid}/collections`, { name: 'Swords', symbol: 'SWD' });
      const wrong = await app.api.post('/item', {
        collection_uid: erc721.body.data.uid,
        item_external_id: 'x',
        data: { name: 'x', image_url: 'https://example.com/x.png', store_image_on_ipfs: false },
      });
      assert.equal(wrong.status, 400, wrong.raw);
      assert.equal((await other.api.get(`/item/${item}`)).status, 404);
    });

    it('mints 5 to A and 3 to B (a number and a string), batched; balances from the API and the chain; item.minted', async () => {
      const [a, b] = await Promise.all([mint(userA, 5, 1), mint(userB, '3', 'b-1')]);
      assert.equal(a.status, 201, a.raw);
      assert.equal(b.status, 201, b.raw);
      const [ma, mb] = await Promise.all([waitDone('mint', a.body.data.uid), waitDone('mint', b.body.data.uid)]);
      assert.deepEqual(ma, { ...ma, item_uid: item, to_user_uid: userA, amount: 5, nonce: 1, status: 'done' });
      assert.equal(mb.amount, 3);
      assert.equal(mb.nonce, 'b-1');
      assert.equal(await balance(userA), 5);
      assert.equal(await balance(userB), 3);
      assert.equal(await onChain(userA), 5n);
      assert.equal(await onChain(userB), 3n);
      assert.equal((await app.api.get(`/item/${item}`)).body.data.minted_supply, 8);
      assert.equal(await rpc().readContract({ address: contract, abi: erc1155, functionName: 'maxSupply', args: [tokenId] }), 1000n);
      const minted = await eventsOf('item.minted');
      assert.equal(minted.length, 2);
      assert.equal(minted[0].item.uid, item);
      const list = await app.api.get(`/item/mint?user_uid=${userA}`);
      assert.deepEqual(
        list.body.data.map((m: { uid: string }) => m.uid),
        [a.body.data.uid],
      );
      const all = await app.api.get(`/item/balance?user_uid=${userB}`);
      assert.deepEqual(all.body.data, [{ item_uid: item, user_uid: userB, amount: 3 }]);
    });

    it('refuses a repeated nonce and a mint past the max supply, changing nothing', async () => {
      const dup = await mint(userA, 1, 1);
      assert.equal(dup.status, 400, dup.raw);
      assert.equal(dup.body.error.detail.code, 'duplicate_nonce');
      const over = await mint(userA, 993, 'over');
      assert.equal(over.status, 400, over.raw);
      assert.equal(over.body.error.detail.code, 'max_supply_exceeded');
      for (const bad of [0, -1, 1.5, '1.5', 'abc', '340282366920938463463374607431768211456'])
        assert.equal((await mint(userA, bad, `bad-${String(bad)}`)).status, 400, `amount ${bad}`);
      assert.equal((await app.api.get(`/item/${item}`)).body.data.minted_supply, 8);
      assert.equal(await balance(userA), 5);
    });

    it('transfers 2 from A to B’s wallet and burns 1 of B’s, gasless: A 3, B 4 from the API and on chain', async () => {
      const tr = await app.api.post('/item/transfer', { item_uid: item, from_user_uid: userA, to_address: walletOf(userB), amount: 2 });
      assert.equal(tr.status, 201, tr.raw);
      const done = await waitDone('transfer', tr.body.data.uid);
      assert.equal(done.amount, 2);
      assert.equal(done.to_address, walletOf(userB).toLowerCase());
      const burn = await app.api.post('/item/burn', { item_uid: item, from_user_uid: userB, amount: '1' });
      assert.equal(burn.status, 201, burn.raw);
      await waitDone('burn', burn.body.data.uid);
      assert.equal(await balance(userA), 3);
      assert.equal(await balance(userB), 4);
      assert.equal(await onChain(userA), 3n);
      assert.equal(await onChain(userB), 4n);
      assert.equal(await rpc().getBalance({ address: walletOf(userA) }), 0n, 'users hold no gas');
      const transferred = await eventsOf('item.transferred');
      assert.equal(transferred.at(-1).transfer.uid, tr.body.data.uid);
      const burned = await eventsOf('item.burned');
      assert.equal(burned.length, 1);
      assert.equal(burned[0].burn.amount, 1);
      assert.equal((await app.api.get(`/item/transfer?user_uid=${userA}`)).body.data[0].uid, tr.body.data.uid);
      assert.equal((await app.api.get(`/item/burn?user_uid=${userB}`)).body.data[0].uid, burn.body.data.uid);
    });

    it('PUT /item/{uid} serves the edited document at once and emits the ERC-1155 URI event for its id on chain', async () => {
      const before = await app.api.get(`/item/${item}`);
      const edited = await app.api.call('PUT', `/item/${item}`, {
        data: { name: 'Greater healing potion', image_url: 'https://example.com/potion2.png', store_image_on_ipfs: false },
      });
      assert.equal(edited.status, 200, edited.raw);
      const got = (await app.api.get(`/item/${item}`)).body.data;
      assert.equal(got.name, 'Greater healing potion');
      assert.equal(got.token_uri, before.body.data.token_uri, 'the URI is unchanged: the service serves the new document at it');
      assert.equal(((await (await fetch(got.token_uri)).json()) as { name: string }).name, 'Greater healing potion');
      const uriEvent = parseAbiItem('event URI(string value, uint256 indexed id)');
      const logs = await waitFor(
        'the URI event of the edit',
        async () => {
          const found = await rpc().getLogs({ address: contract, event: uriEvent, args: { id: tokenId }, fromBlock: 0n, strict: true });
          return found.length > 0 ? found : null;
        },
        30_000,
      );
      assert.equal(logs.length, 1, 'one event per edit');
      assert.equal(logs[0].args.value, got.token_uri);
      // An item of another App, or a collection without editable assets, is not edited and sends nothing.
      const foreign = await other.api.call('PUT', `/item/${item}`, { data: { name: 'x', image_url: 'https://example.com/x.png', store_image_on_ipfs: false } });
      assert.equal(foreign.status, 404, foreign.raw);
    });

    it('refuses a transfer or burn over what the user may spend (in-flight ones reserved)', async () => {
      const over = await app.api.post('/item/transfer', { item_uid: item, from_user_uid: userA, to_address: walletOf(userB), amount: 4 });
      assert.equal(over.status, 400, over.raw);
      assert.equal(over.body.error.detail.code, 'insufficient_balance');
      const burnOver = await app.api.post('/item/burn', { item_uid: item, from_user_uid: userB, amount: 5 });
      assert.equal(burnOver.body.error.detail.code, 'insufficient_balance');
      const bad = await app.api.post('/item/transfer', { item_uid: item, from_user_uid: userA, to_address: 'nope', amount: 1 });
      assert.equal(bad.status, 400);
      assert.equal(await balance(userA), 3);
    });

    it('a TransferSingle from outside into A’s wallet raises A’s balance and emits item.transferred', async () => {
      const outsider = privateKeyToAccount(generatePrivateKey());
      await embeddedChain.fund(t, outsider.address, parseEther('1'));
      const out = await app.api.post('/item/transfer', { item_uid: item, from_user_uid: userB, to_address: outsider.address, amount: 1 });
      await waitDone('transfer', out.body.data.uid);
      assert.equal(await balance(userB), 3);
      const wallet = createWalletClient({ account: outsider, chain: foundry, transport: http(t.svc.chain!.rpcUrl) });
      const hash = await wallet.writeContract({
        address: contract,
        abi: erc1155,
        functionName: 'safeTransferFrom',
        args: [outsider.address, walletOf(userA), tokenId, 1n, '0x'],
      });
      await rpc().waitForTransactionReceipt({ hash });
      await waitFor('the deposit counted', async () => (await balance(userA)) === 4, 30_000);
      assert.equal(await onChain(userA), 4n);
      const deposit = await waitFor('item.transferred of the deposit', async () => (await eventsOf('item.transferred')).find((e) => e.deposit));
      assert.equal(deposit.item.uid, item);
      assert.deepEqual(deposit.deposit, {
        user_uid: userA,
        from_address: outsider.address.toLowerCase(),
        to_address: walletOf(userA).toLowerCase(),
        amount: 1,
        tx_hash: hash,
      });
    });

    it('a TransferBatch from outside into A’s wallet raises A’s balance of each id and emits item.transferred per id', async () => {
      const second = await app.api.post('/item', {
        collection_uid: collection,
        item_external_id: 'potion-mana',
        data: { name: 'Mana potion', image_url: 'https://example.com/mana.png', store_image_on_ipfs: false },
      });
      assert.equal(second.status, 201, second.raw);
      const mana = second.body.data.uid as string;
      const manaId = BigInt((await app.api.get(`/item/${mana}`)).body.data.token_id);
      const minted = await app.api.post('/item/mint', { item_uid: mana, to_user_uid: userB, amount: 2, nonce: 'batch-deposit' });
      await waitDone('mint', minted.body.data.uid);
      // B sends one of each to an outsider, which sends both back to A in one TransferBatch.
      const outsider = privateKeyToAccount(generatePrivateKey());
      await embeddedChain.fund(t, outsider.address, parseEther('1'));
      for (const [item_uid, amount] of [
        [item, 1],
        [mana, 2],
      ] as const) {
        const out = await app.api.post('/item/transfer', { item_uid, from_user_uid: userB, to_address: outsider.address, amount });
        assert.equal(out.status, 201, out.raw);
        await waitDone('transfer', out.body.data.uid);
      }
      const manaBalance = async (user: string) => (await app.api.get(`/item/balance?item_uid=${mana}&user_uid=${user}`)).body.data.amount as number;
      const before = await balance(userA);
      assert.equal(await manaBalance(userA), 0);
      const wallet = createWalletClient({ account: outsider, chain: foundry, transport: http(t.svc.chain!.rpcUrl) });
      const hash = await wallet.writeContract({
        address: contract,
        abi: erc1155,
        functionName: 'safeBatchTransferFrom',
        args: [outsider.address, walletOf(userA), [tokenId, manaId], [1n, 2n], '0x'],
      });
      await rpc().waitForTransactionReceipt({ hash });
      await waitFor('the batch deposit counted', async () => (await balance(userA)) === before + 1 && (await manaBalance(userA)) === 2, 30_000);
      assert.equal(await onChain(userA), BigInt(before + 1));
      assert.equal(await rpc().readContract({ address: contract, abi: erc1155, functionName: 'balanceOf', args: [walletOf(userA), manaId] }), 2n);
      const deposits = await waitFor('item.transferred per id of the batch', async () => {
        const found = (await eventsOf('item.transferred')).filter((e) => e.deposit?.tx_hash === hash);
        return found.length >= 2 ? found : null;
      });
      assert.deepEqual(
        deposits.map((e) => [e.item.uid, e.deposit.amount, e.deposit.user_uid]).sort(),
        [
          [item, 1, userA],
          [mana, 2, userA],
        ].sort(),
      );
      assert.equal(deposits.length, 2, 'one event per id, not one per log or per pass');
    });

    it('a mint accepted while its collection deploys waits for the deployment, which wakes it', async () => {
      const db = t.svc.ctx.db;
      const user = await newUser();
      // The collection read as deploying again; the deployment's outcome below restores it.
      await db.updateTable('collections').set({ status: 'deploying', contract_address: null }).where('uid', '=', collection).execute();
      const m = await mint(user, 1, 'while-deploying');
      assert.equal(m.status, 201, m.raw);
      const kind = kindOn(t.svc.ctx, ITEM_MINT_JOB, t.svc.ctx.installation.homeChainId);
      const job = await waitFor('the mint deferred for the deployment', async () => {
        const j = await db
          .selectFrom('jobs')
          .select(['id', 'run_at', 'updated_at'])
          .where('kind', '=', kind)
          .where('ref', '=', m.body.data.uid)
          .where('status', '=', 'queued')
          .executeTakeFirst();
        return j && Number(j.run_at) > Date.now() ? j : null;
      });
      // Measured from the deferral itself (its updated_at), not from now: a busy machine's pause before
      // this line does not make the test fail.
      const deferredFor = Number(job.run_at) - Number(job.updated_at);
      assert.ok(deferredFor >= DEPLOYMENT_WAIT_MS / 2, `deferred for about the whole wait, not ${deferredFor} ms`);
      await db.transaction().execute(async (tx) => {
        await tx.updateTable('collections').set({ status: 'deployed', contract_address: contract.toLowerCase() }).where('uid', '=', collection).execute();
        await mintsWaiting(t.svc.ctx.chains!.get(t.svc.ctx.installation.homeChainId)!)(tx, collection);
      });
      const woken = await db.selectFrom('jobs').select(['status', 'run_at']).where('id', '=', job.id).executeTakeFirstOrThrow();
      assert.ok(woken.status !== 'queued' || Number(woken.run_at) <= Date.now(), `due in ${Number(woken.run_at) - Date.now()} ms`);
      await waitDone('mint', m.body.data.uid);
      assert.equal(await balance(user), 1);
    });
  });
}
