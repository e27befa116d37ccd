// Items' images and metadata stored as assets' are (docs/api.md, Items), against a real service (HTTP +
// workers + embedded anvil), once per database: a production App's item document on IPFS with its CID
// set on the contract (`uri(id)` answers `ipfs://<cid>`, the URI event says so), the image kept when
// asked, a new CID after an edit, mints unaffected; a development App's image kept by the service.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPublicClient, http as viemHttp, parseAbi, parseAbiItem, type Address } from 'viem';
import { foundry } from 'viem/chains';
import { CID } from 'multiformats/cid';
import * as raw from 'multiformats/codecs/raw';
import { sha256 } from 'multiformats/hashes/sha2';
import { ApiClient, waitFor } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { ITEM_URI_TX } from '../../src/chain/outcomes.js';
import { ITEM_URI_JOB } from '../../src/jobs/kinds.js';

const erc1155 = parseAbi(['function uri(uint256) view returns (string)']);
const uriEvent = parseAbiItem('event URI(string value, uint256 indexed id)');
/** The CIDv1 (raw, sha2-256) of bytes, computed here with multiformats only: what a one-chunk file gets. */
const rawCid = async (b: Uint8Array): Promise<string> => CID.create(1, raw.code, await sha256.digest(b)).toString();
const image = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), crypto.randomBytes(5000)]); // a PNG by its magic bytes

type TestApp = Awaited<ReturnType<TestService['newApp']>>;

export function itemMetadataSuite(db: 'sqlite' | 'postgres'): void {
  describe(`item images and metadata on ${db}`, () => {
    let t: TestService;
    let images: http.Server;
    let imageUrl: string;
    let imageHits = 0;
    let prod: TestApp;
    let dev: TestApp;
    let admin: ApiClient;
    const rpc = () => createPublicClient({ chain: foundry, transport: viemHttp(t.svc.chain!.rpcUrl) });

    before(async () => {
      images = http.createServer((req, res) => {
        imageHits++;
        if (req.url === '/missing.png') res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        else res.writeHead(200, { 'content-type': 'image/png' }).end(image);
      });
      await new Promise<void>((r) => images.listen(0, '127.0.0.1', r));
      imageUrl = `http://127.0.0.1:${(images.address() as AddressInfo).port}/potion.png`;
      t = await startTestService(db, { OUTBOUND_ALLOW_PRIVATE: 'true' });
      [prod, dev] = await Promise.all([t.newApp('production'), t.newApp('development')]);
      admin = new ApiClient(`${t.svc.url}/admin/v1`, undefined, t.svc.ctx.installation.operatorToken);
    });
    after(async () => {
      await t?.stop();
      await new Promise((r) => images?.close(r));
    });

    /** An editable ERC-1155 collection of the App; `deployed` false returns at once (still deploying). */
    const newCollection = async (app: TestApp, deployed = true) => {
      const c = await admin.post(`/apps/${app.uid}/collections`, { name: 'Potions', symbol: 'POT', standard: 'ERC1155', editable_assets: true });
      assert.equal(c.status, 201, c.raw);
      const uid = c.body.data.uid as string;
      if (deployed) await contractOf(app, uid);
      return uid;
    };
    const contractOf = (app: TestApp, collection: string) =>
      waitFor(`collection ${collection} deployed`, async () => {
        const r = await app.api.get(`/collection/${collection}`);
        return r.body.data.status === 'deployed' ? (r.body.data.contract_address as Address) : null;
      });
    const createItem = async (app: TestApp, collection: string, storeImage: boolean, image_url = imageUrl) => {
      const r = await app.api.post('/item', {
        collection_uid: collection,
        item_external_id: `potion-${crypto.randomUUID()}`,
        data: { name: 'Healing potion', image_url, store_image_on_ipfs: storeImage, attributes: [{ trait_type: 'hp', value: 50 }] },
      });
      assert.equal(r.status, 201, r.raw);
      return r.body.data.uid as string;
    };
    /** The item once its token URI is an IPFS one other than `not`. */
    const onIpfs = (app: TestApp, item: string, not?: string) =>
      waitFor(`item ${item} on IPFS`, async () => {
        const r = await app.api.get(`/item/${item}`);
        assert.equal(r.status, 200, r.raw);
        const uri = r.body.data.token_uri as string;
        return uri.startsWith('ipfs://') && uri !== not ? r.body.data : null;
      });
    const onChainUri = (contract: Address, tokenId: number) =>
      rpc().readContract({ address: contract, abi: erc1155, functionName: 'uri', args: [BigInt(tokenId)] });
    const chainSays = (contract: Address, tokenId: number, uri: string) =>
      waitFor(`uri(${tokenId}) = ${uri}`, async () => (await onChainUri(contract, tokenId)) === uri, 30_000);
    const gatewayBytes = async (cid: string) => {
      const r = await fetch(`${t.svc.url}/ipfs/${cid}`);
      assert.equal(r.status, 200);
      return Buffer.from(await r.arrayBuffer());
    };

    it('production App, created before its collection is deployed: document and image on IPFS, uri(id) = token_uri once deployed', async () => {
      const collection = await newCollection(prod, false);
      const item = await createItem(prod, collection, true);
      const got = await onIpfs(prod, item);
      const imageCid = await rawCid(image);
      assert.equal(got.metadata.image, `ipfs://${imageCid}`);
      assert.equal(got.metadata.org_image_url, imageUrl);
      assert.equal(got.metadata.original_id, item);
      assert.ok((await gatewayBytes(imageCid)).equals(image));
      const docCid = got.token_uri.slice('ipfs://'.length);
      const doc = await gatewayBytes(docCid);
      assert.equal(await rawCid(doc), docCid, 'the document served hashes to its own CID');
      assert.deepEqual(JSON.parse(doc.toString('utf8')), got.metadata);
      const contract = await contractOf(prod, collection);
      await chainSays(contract, got.token_id, got.token_uri);
      const logs = await rpc().getLogs({ address: contract, event: uriEvent, args: { id: BigInt(got.token_id) }, fromBlock: 0n, strict: true });
      assert.deepEqual(
        logs.map((l) => l.args.value),
        [got.token_uri],
      );
      // The metadata route serves the same document (the chain's answer before the CID was set).
      const route = await fetch(`${t.svc.url}/metadata/${collection}/${got.token_id}`);
      assert.deepEqual(await route.json(), got.metadata);
      // Mints are those of any item; the URI stays.
      const user = (await prod.api.post('/user', {})).body.data.uid as string;
      const m = await prod.api.post('/item/mint', { item_uid: item, to_user_uid: user, amount: 3, nonce: 1 });
      assert.equal(m.status, 201, m.raw);
      await waitFor('item mint done', async () => (await prod.api.get(`/item/mint/${m.body.data.uid}`)).body.data.status === 'done', 60_000);
      assert.equal(await onChainUri(contract, got.token_id), got.token_uri);
      assert.equal((await prod.api.get(`/item/${item}`)).body.data.token_uri, got.token_uri);
    });

    it('production App, PUT /item: a new document CID, set on chain with its URI event', async () => {
      const collection = await newCollection(prod);
      const contract = await contractOf(prod, collection);
      const item = await createItem(prod, collection, false);
      const first = await onIpfs(prod, item);
      assert.equal(first.metadata.image, imageUrl, 'store_image_on_ipfs false: the image is not fetched');
      await chainSays(contract, first.token_id, first.token_uri);
      const edited = await prod.api.call('PUT', `/item/${item}`, { data: { name: 'Greater healing potion', image_url: imageUrl } });
      assert.equal(edited.status, 200, edited.raw);
      const second = await onIpfs(prod, item, first.token_uri);
      assert.equal(second.name, 'Greater healing potion');
      assert.equal(JSON.parse((await gatewayBytes(second.token_uri.slice(7))).toString('utf8')).name, 'Greater healing potion');
      await chainSays(contract, second.token_id, second.token_uri);
      const logs = await rpc().getLogs({ address: contract, event: uriEvent, args: { id: BigInt(second.token_id) }, fromBlock: 0n, strict: true });
      assert.deepEqual(
        logs.map((l) => l.args.value),
        [first.token_uri, second.token_uri],
      );
    });

    it('production App, an edit while the first CID waits in the mempool: each document announced once', async () => {
      const collection = await newCollection(prod);
      const contract = await contractOf(prod, collection);
      const node = t.svc.chain!.rpcUrl;
      const call = (method: string, params: unknown[] = []) =>
        fetch(node, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
      /** The item's setTokenCID transactions, oldest first: the document each carries, and whether its outcome is applied. */
      const sent = async (item: string) =>
        (
          await t.svc.ctx.db
            .selectFrom('chain_txs')
            .select(['payload', 'handled'])
            .where('kind', '=', ITEM_URI_TX)
            .where('ref', '=', item)
            .orderBy('id')
            .execute()
        ).map((r) => ({ uri: (JSON.parse(r.payload) as { token_uri?: string }).token_uri, handled: Number(r.handled) === 1 }));
      await call('evm_setAutomine', [false]);
      let item = '';
      try {
        item = await createItem(prod, collection, false);
        const first = await onIpfs(prod, item);
        await waitFor('the first CID sent', async () => (await sent(item)).some((s) => s.uri === first.token_uri), 30_000);
        const edited = await prod.api.call('PUT', `/item/${item}`, { data: { name: 'Greater healing potion', image_url: imageUrl } });
        assert.equal(edited.status, 200, edited.raw);
        const second = await onIpfs(prod, item, first.token_uri);
        await waitFor('the second CID sent', async () => (await sent(item)).some((s) => s.uri === second.token_uri), 30_000);
      } finally {
        await call('evm_setAutomine', [true]);
        await call('evm_mine'); // both in one block: the first lands after the item was edited
      }
      // Settled: every transaction's outcome applied and no job of the item left (the first's landing
      // queues one, finding the item edited since).
      await waitFor(
        'the item settled',
        async () => {
          const jobs = await t.svc.ctx.db
            .selectFrom('jobs')
            .select('id')
            .where('kind', '=', ITEM_URI_JOB)
            .where('ref', '=', item)
            .where('status', 'in', ['queued', 'running'])
            .execute();
          return jobs.length === 0 && (await sent(item)).every((s) => s.handled);
        },
        30_000,
      );
      const current = (await prod.api.get(`/item/${item}`)).body.data;
      await chainSays(contract, current.token_id, current.token_uri);
      const logs = await rpc().getLogs({ address: contract, event: uriEvent, args: { id: BigInt(current.token_id) }, fromBlock: 0n, strict: true });
      assert.equal(logs.length, 2, `one URI event per document: ${logs.map((l) => l.args.value).join(', ')}`);
      assert.equal(logs[1].args.value, current.token_uri);
      assert.deepEqual(
        (await sent(item)).map((s) => s.uri),
        logs.map((l) => l.args.value),
      );
    });

    it('production App, an image that cannot be fetched: the document goes to IPFS pointing at image_url as given', async () => {
      const collection = await newCollection(prod);
      const contract = await contractOf(prod, collection);
      const missing = imageUrl.replace('/potion.png', '/missing.png');
      const item = await createItem(prod, collection, true, missing);
      const got = await onIpfs(prod, item);
      assert.equal(got.metadata.image, missing);
      assert.equal(got.metadata.org_image_url, missing);
      assert.deepEqual(JSON.parse((await gatewayBytes(got.token_uri.slice(7))).toString('utf8')), got.metadata);
      await chainSays(contract, got.token_id, got.token_uri);
    });

    it('development App, store_image_on_ipfs: the image kept by the service; token_uri and uri(id) stay the metadata route', async () => {
      const collection = await newCollection(dev);
      const contract = await contractOf(dev, collection);
      const hits = imageHits;
      const item = await createItem(dev, collection, true);
      const sha = crypto.createHash('sha256').update(image).digest('hex');
      const got = await waitFor('the image stored', async () => {
        const r = (await dev.api.get(`/item/${item}`)).body.data;
        return r.metadata.image !== imageUrl ? r : null;
      });
      assert.equal(got.metadata.image, `${t.svc.ctx.installation.publicUrl}/files/${sha}`);
      assert.equal(got.metadata.org_image_url, imageUrl);
      assert.equal(imageHits, hits + 1, 'fetched once');
      assert.equal(got.token_uri, `${t.svc.ctx.installation.publicUrl}/metadata/${collection}/${got.token_id}`);
      assert.equal(await onChainUri(contract, got.token_id), got.token_uri);
      assert.deepEqual(await (await fetch(got.token_uri)).json(), got.metadata);
      const stored = await t.svc.ctx.db.selectFrom('items').select(['store_image', 'token_uri']).where('uid', '=', item).executeTakeFirstOrThrow();
      assert.deepEqual(stored, { store_image: 1, token_uri: null });
    });

    it('an image URL the service cannot fetch is refused at request time when it would fetch it, and nothing is stored', async () => {
      const collection = await newCollection(prod, false);
      const unfetchable = 'ipfs://bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e';
      const body = { collection_uid: collection, item_external_id: 'unfetchable', data: { name: 'x', image_url: unfetchable, store_image_on_ipfs: true } };
      const r = await prod.api.post('/item', body);
      assert.equal(r.status, 400, r.raw);
      assert.equal(r.body.error.detail.field_name, 'data.image_url');
      assert.match(r.body.error.detail.message, /scheme ipfs: is not allowed/);
      assert.equal(await t.svc.ctx.db.selectFrom('items').select('uid').where('item_external_id', '=', 'unfetchable').executeTakeFirst(), undefined);
      const kept = await createItem(prod, collection, true);
      const edit = await prod.api.call('PUT', `/item/${kept}`, { data: { name: 'y', image_url: unfetchable } });
      assert.equal(edit.status, 400, edit.raw);
      assert.equal(edit.body.error.detail.field_name, 'data.image_url');
      assert.equal((await prod.api.get(`/item/${kept}`)).body.data.name, 'Healing potion', 'the edit changed nothing');
      // Without store_image_on_ipfs nothing is fetched, so the same URL is accepted.
      const plain = await prod.api.post('/item', { ...body, item_external_id: 'plain', data: { ...body.data, store_image_on_ipfs: false } });
      assert.equal(plain.status, 201, plain.raw);
    });
  });
}
