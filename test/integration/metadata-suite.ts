// Asset images and metadata end to end: a real service (HTTP + workers + embedded
// anvil + SQLite or PostgreSQL) fetching images from a local HTTP server, storing them on IPFS (production Apps) or in
// its own file store (development Apps), minting with the resulting token URI, and refusing image URLs
// that point into the operator's network.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import dns from 'node:dns';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPublicClient, http as viemHttp, parseAbi } from 'viem';
import { CID } from 'multiformats/cid';
import * as raw from 'multiformats/codecs/raw';
import { sha256 } from 'multiformats/hashes/sha2';
import { outboundTestHooks } from '../../src/net/outbound.js';
import { cidOfBytes } from '../../src/metadata/unixfs.js';
import pg from 'pg';
import { PG_BASE, waitFor } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';

const erc721 = parseAbi(['function tokenURI(uint256) view returns (string)']);
const PNG_MAGIC = Buffer.from('89504e470d0a1a0a', 'hex');
/** PNG signature + deterministic filler: an "image" by content type and magic bytes. */
const fakePng = (size: number, seed: string): Buffer => {
  const cipher = crypto.createCipheriv('aes-128-ctr', crypto.createHash('sha256').update(seed).digest().subarray(0, 16), Buffer.alloc(16));
  return Buffer.concat([PNG_MAGIC, cipher.update(Buffer.alloc(size - PNG_MAGIC.length)), cipher.final()]);
};
/** The CIDv1 (raw, sha2-256) of bytes, computed here with multiformats only: what a one-chunk file gets. */
const rawCid = async (b: Uint8Array): Promise<string> => CID.create(1, raw.code, await sha256.digest(b)).toString();
const sha256Hex = (b: Uint8Array): string => crypto.createHash('sha256').update(b).digest('hex');

/** The image host: fixed routes, plus a counter per path (flaky answers first 503, then the image). */
class ImageServer {
  readonly small = fakePng(10_000, 'small');
  readonly devImage = fakePng(20_000, 'dev'); // only ever used by a development App
  readonly big = fakePng(600 * 1024, 'big'); // three 256 KiB chunks: a dag-pb root
  readonly huge = fakePng(1536 * 1024, 'huge'); // over IMAGE_MAX_BYTES (1 MiB in these tests)
  readonly hits = new Map<string, number>();
  redirectTo = '';
  private server = http.createServer((req, res) => {
    const p = (req.url ?? '/').split('?')[0];
    const n = (this.hits.get(p) ?? 0) + 1;
    this.hits.set(p, n);
    const send = (status: number, type: string, body: Buffer | string) => res.writeHead(status, { 'content-type': type }).end(body);
    switch (p) {
      case '/small.png':
        return send(200, 'image/png', this.small);
      case '/big.png':
        return send(200, 'image/png', this.big);
      case '/huge.png':
        return send(200, 'image/png', this.huge);
      case '/flaky.png':
        return n === 1 ? send(503, 'text/plain', 'busy') : send(200, 'image/png; charset=binary', this.small);
      case '/page.html':
        return send(200, 'text/html', '<!doctype html><p>not an image</p>');
      case '/fake.png':
        return send(200, 'image/png', '<!doctype html><p>an HTML page calling itself a PNG</p>');
      case '/dev.png':
        return send(200, 'image/png', this.devImage);
      case '/moved.png':
        return res.writeHead(302, { location: '/dev.png' }).end();
      case '/away.png':
        return res.writeHead(302, { location: this.redirectTo }).end();
      default:
        return send(404, 'text/plain', 'not found');
    }
  });
  port = 0;
  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }
  url(p: string, host = '127.0.0.1'): string {
    return `http://${host}:${this.port}${p}`;
  }
  stop(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

/** A stand-in Kubo RPC (`/api/v0/add`) and IPFS Pinning Service (`/pins`) recording what they were sent. */
class FakeIpfs {
  readonly added: { query: URLSearchParams; bytes: Buffer; cid: string }[] = [];
  readonly pins: { auth: string; body: { cid: string; name: string } }[] = [];
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const body = Buffer.concat(chunks);
      if (req.method === 'POST' && url.pathname === '/api/v0/add') {
        // Parse the multipart body the way any HTTP server would, then answer like Kubo (NDJSON).
        const form = await new Response(body, { headers: { 'content-type': String(req.headers['content-type']) } }).formData();
        const file = form.get('file') as Blob;
        const bytes = Buffer.from(await file.arrayBuffer());
        const cid = (await cidOfBytes(bytes)).toString();
        this.added.push({ query: url.searchParams, bytes, cid });
        return res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify({ Name: 'f', Hash: cid, Size: String(bytes.length) })}\n`);
      }
      if (req.method === 'POST' && url.pathname === '/pins') {
        this.pins.push({ auth: String(req.headers.authorization), body: JSON.parse(body.toString('utf8')) });
        return res.writeHead(202, { 'content-type': 'application/json' }).end('{"requestid":"r1","status":"queued"}');
      }
      res.writeHead(404).end();
    });
  });
  url = '';
  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }
  stop(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

type App = Awaited<ReturnType<TestService['newApp']>>;

/**
 * Stops the service, then (PostgreSQL) waits until its database has no backends left before the helper
 * drops it `with (force)`. pg-pool's end() resolves before its clients' connections are closed; a
 * backend still open at the drop is terminated and its client raises an uncaught 'error' (no pool error
 * listener). Reported to the lead; this keeps the test from depending on that race.
 */
async function stopService(t: TestService | undefined): Promise<void> {
  if (!t) return;
  await t.svc.stop(); // idempotent: t.stop() below finds nothing left to stop
  const dbUrl = t.svc.ctx.config.databaseUrl;
  if (dbUrl?.startsWith('postgres')) {
    const name = new URL(dbUrl).pathname.slice(1);
    const admin = new pg.Client({ connectionString: `${PG_BASE}/postgres` });
    await admin.connect();
    try {
      await waitFor(
        "the service's PostgreSQL connections to close",
        async () => {
          const r = await admin.query('select count(*)::int as n from pg_stat_activity where datname = $1', [name]);
          return r.rows[0].n === 0;
        },
        10_000,
        20,
      );
    } finally {
      await admin.end();
    }
  }
  await t.stop();
}

const assetBody = (user_uid: string, collection_uid: string, image_url: string, store_image_on_ipfs: boolean, extra: Record<string, unknown> = {}) => ({
  user_uid,
  collection_uid,
  asset_external_id: `ext-${crypto.randomUUID()}`,
  data: {
    name: `Shield ${crypto.randomUUID().slice(0, 8)}`,
    unique_name: true,
    image_url,
    store_image_on_ipfs,
    description: 'round',
    attributes: [{ trait_type: 'level', value: 2 }],
    ...extra,
  },
});

async function newUser(app: App): Promise<string> {
  const r = await app.api.post('/user', {});
  assert.equal(r.status, 201, r.raw);
  return r.body.data.uid;
}

async function createAsset(app: App, body: object): Promise<string> {
  const r = await app.api.post('/asset', body);
  assert.equal(r.status, 201, r.raw);
  return r.body.data.uid;
}

export function metadataSuite(db: 'sqlite' | 'postgres', opts: { strict: boolean }): void {
  describe(`asset images and metadata on ${db} (OUTBOUND_ALLOW_PRIVATE=true)`, () => {
    let t: TestService;
    let images: ImageServer;
    let ipfs: FakeIpfs;
    let prod: App;
    let dev: App;
    let prodCollection: string;
    let devCollection: string;
    let prodUser: string;
    let devUser: string;

    before(async () => {
      images = await new ImageServer().start();
      ipfs = await new FakeIpfs().start();
      t = await startTestService(db, {
        OUTBOUND_ALLOW_PRIVATE: 'true',
        IMAGE_MAX_BYTES: String(1024 * 1024),
        IPFS_API_URL: ipfs.url,
        PINNING_SERVICE_URL: ipfs.url,
        PINNING_SERVICE_TOKEN: 'pin-token-test',
      });
      [prod, dev] = await Promise.all([t.newApp('production'), t.newApp('development')]);
      [prodCollection, devCollection] = await Promise.all([t.newCollection(prod.uid, true), t.newCollection(dev.uid, true)]);
      [prodUser, devUser] = await Promise.all([newUser(prod), newUser(dev)]);
    });
    after(async () => {
      await stopService(t);
      await images?.stop();
      await ipfs?.stop();
    });

    const minted = (app: App, uid: string) =>
      waitFor(
        `asset ${uid} minted`,
        async () => {
          const r = await app.api.get(`/asset/${uid}`);
          return r.body?.data?.is_minted ? r.body.data : null;
        },
        60_000,
      );
    const failed = (uid: string) =>
      waitFor(
        `asset ${uid} failed`,
        async () => {
          const row = await t.svc.ctx.db.selectFrom('assets').select(['mint_status', 'mint_error']).where('uid', '=', uid).executeTakeFirst();
          return row?.mint_status === 'failed' ? row : null;
        },
        60_000,
      );
    const fetchPath = (p: string, headers: Record<string, string> = {}) => fetch(`${t.svc.url}${p}`, { headers });
    const onChainUri = async (app: App, collection: string, tokenId: number): Promise<string> => {
      const c = await app.api.get(`/collection/${collection}`);
      const client = createPublicClient({ transport: viemHttp(t.svc.chain!.rpcUrl) });
      return client.readContract({ address: c.body.data.contract_address, abi: erc721, functionName: 'tokenURI', args: [BigInt(tokenId)] });
    };

    it('production App: the image is on IPFS as CIDv1 raw sha2-256 of its bytes, served by the gateway; token_uri is the document CID, on chain too', async () => {
      const imageUrl = images.url('/small.png');
      const uid = await createAsset(prod, assetBody(prodUser, prodCollection, imageUrl, true));
      const a = await minted(prod, uid);

      const imageCid = await rawCid(images.small);
      assert.equal(a.metadata.image, `ipfs://${imageCid}`);
      assert.equal(a.metadata.org_image_url, imageUrl);
      assert.equal(a.metadata.original_id, uid);
      assert.deepEqual(a.metadata.attributes, [{ trait_type: 'level', value: 2 }]);

      const img = await fetchPath(`/ipfs/${imageCid}`);
      assert.equal(img.status, 200);
      assert.equal(img.headers.get('content-type'), 'image/png');
      assert.equal(img.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.ok(Buffer.from(await img.arrayBuffer()).equals(images.small));

      assert.match(a.token_uri, /^ipfs:\/\/baf/);
      const docCid = a.token_uri.slice('ipfs://'.length);
      const doc = await fetchPath(`/ipfs/${docCid}`);
      assert.equal(doc.status, 200);
      assert.match(doc.headers.get('content-type') ?? '', /^application\/json/);
      const docBytes = Buffer.from(await doc.arrayBuffer());
      assert.equal(await rawCid(docBytes), docCid, 'the document served hashes to its own CID');
      assert.deepEqual(JSON.parse(docBytes.toString('utf8')), a.metadata);

      assert.equal(await onChainUri(prod, prodCollection, a.token_id), a.token_uri);
      assert.equal(images.hits.get('/small.png'), 1, 'fetched once');

      // Published: both files added to the Kubo node (which computed the same CIDs) and pinned remotely.
      for (const cid of [imageCid, docCid]) {
        const added = await waitFor(`Kubo add of ${cid}`, async () => ipfs.added.find((x) => x.cid === cid), 30_000);
        assert.equal(added.query.get('cid-version'), '1');
        assert.equal(added.query.get('raw-leaves'), 'true');
        assert.equal(added.query.get('pin'), 'true');
        const pin = await waitFor(`pin of ${cid}`, async () => ipfs.pins.find((x) => x.body.cid === cid), 30_000);
        assert.equal(pin.auth, 'Bearer pin-token-test');
      }
      assert.ok(ipfs.added.find((x) => x.cid === imageCid)!.bytes.equals(images.small));
      assert.equal(ipfs.pins.find((x) => x.body.cid === docCid)!.body.name, `${uid}-metadata.json`);
    });

    it('production App: an image over 256 KiB gets the multi-chunk UnixFS CID and is served back whole', async () => {
      const uid = await createAsset(prod, assetBody(prodUser, prodCollection, images.url('/big.png'), true));
      const a = await minted(prod, uid);
      const cid = (await cidOfBytes(images.big)).toString();
      assert.match(cid, /^bafybei/); // a dag-pb root, not a raw leaf
      assert.equal(a.metadata.image, `ipfs://${cid}`);
      const img = await fetchPath(`/ipfs/${cid}`);
      assert.equal(img.status, 200);
      assert.ok(Buffer.from(await img.arrayBuffer()).equals(images.big));
      assert.equal(await onChainUri(prod, prodCollection, a.token_id), a.token_uri);
    });

    it('production App, store_image_on_ipfs false: image stays image_url (never fetched), the document is still on IPFS', async () => {
      const imageUrl = images.url('/never-fetched.png');
      const uid = await createAsset(prod, assetBody(prodUser, prodCollection, imageUrl, false));
      const a = await minted(prod, uid);
      assert.equal(a.metadata.image, imageUrl);
      assert.equal(images.hits.get('/never-fetched.png'), undefined);
      const docCid = a.token_uri.replace('ipfs://', '');
      const doc = Buffer.from(await (await fetchPath(`/ipfs/${docCid}`)).arrayBuffer());
      assert.equal(await rawCid(doc), docCid);
      assert.equal(await onChainUri(prod, prodCollection, a.token_id), a.token_uri);
    });

    it("development App: the image and document come from the service's file store, never from IPFS", async () => {
      const uid = await createAsset(dev, assetBody(devUser, devCollection, images.url('/moved.png'), true)); // a redirect, followed
      const a = await minted(dev, uid);
      const sha = sha256Hex(images.devImage);
      assert.equal(a.metadata.image, `${t.svc.url}/files/${sha}`);
      assert.equal(a.metadata.org_image_url, images.url('/moved.png'));
      const img = await fetchPath(`/files/${sha}`);
      assert.equal(img.status, 200);
      assert.equal(img.headers.get('content-type'), 'image/png');
      assert.equal(img.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.ok(Buffer.from(await img.arrayBuffer()).equals(images.devImage));
      assert.equal((await fetchPath(`/ipfs/${await rawCid(images.devImage)}`)).status, 404, 'not in the IPFS blockstore');

      // The document is served by the collection's metadata route, which is also the on-chain tokenURI.
      assert.equal(a.token_uri, `${t.svc.url}/metadata/${devCollection}/${a.token_id}`);
      const doc = await fetch(a.token_uri);
      assert.match(doc.headers.get('content-type') ?? '', /^application\/json/);
      const docBytes = Buffer.from(await doc.arrayBuffer());
      assert.deepEqual(JSON.parse(docBytes.toString('utf8')), a.metadata);
      assert.equal((await fetchPath(`/ipfs/${await rawCid(docBytes)}`)).status, 404, 'the document is not on IPFS');
      // Nor published: no publish job exists for a development App's files.
      const jobs = await t.svc.ctx.db.selectFrom('jobs').select('ref').where('kind', '=', 'ipfs.publish').execute();
      const devCids = [await rawCid(images.devImage), await rawCid(docBytes)];
      assert.equal(
        jobs.some((j) => devCids.includes(j.ref)),
        false,
      );
      assert.equal(
        ipfs.added.some((x) => x.bytes.equals(images.devImage) || x.bytes.equals(docBytes)),
        false,
      );
      assert.equal(await onChainUri(dev, devCollection, a.token_id), a.token_uri);
    });

    it('development App, store_image_on_ipfs false: unchanged (image_url as is, token URI = baseURI + id)', async () => {
      const imageUrl = images.url('/never-fetched-dev.png');
      const uid = await createAsset(dev, assetBody(devUser, devCollection, imageUrl, false));
      const a = await minted(dev, uid);
      assert.equal(a.metadata.image, imageUrl);
      assert.equal(a.token_uri, `${t.svc.url}/metadata/${devCollection}/${a.token_id}`);
      assert.equal(await onChainUri(dev, devCollection, a.token_id), a.token_uri);
      assert.equal(images.hits.get('/never-fetched-dev.png'), undefined);
    });

    it('a transient 503 is retried and the asset then mints', async () => {
      const uid = await createAsset(prod, assetBody(prodUser, prodCollection, images.url('/flaky.png'), true));
      const a = await minted(prod, uid);
      assert.equal(images.hits.get('/flaky.png'), 2);
      assert.equal(a.metadata.image, `ipfs://${await rawCid(images.small)}`);
    });

    it('a 404, a non-image, an HTML page labelled image/png and a too-large image fail the asset visibly', async () => {
      const cases: [string, RegExp][] = [
        ['/missing.png', /HTTP 404/],
        ['/page.html', /did not answer with an image \(Content-Type: text\/html\)/],
        ['/fake.png', /not a PNG, JPEG, GIF, WebP, AVIF or SVG/],
        ['/huge.png', /larger than the limit of 1048576 bytes/],
      ];
      const uids = await Promise.all(cases.map(([p]) => createAsset(prod, assetBody(prodUser, prodCollection, images.url(p), true))));
      for (const [i, [p, reason]] of cases.entries()) {
        const row = await failed(uids[i]);
        assert.match(row.mint_error ?? '', reason, p);
        const api = await prod.api.get(`/asset/${uids[i]}`);
        assert.equal(api.body.data.is_minted, false);
        assert.equal(api.body.data.token_uri, null);
        const events = await t.svc.ctx.db
          .selectFrom('events')
          .select(['type', 'payload'])
          .where('app_uid', '=', prod.uid)
          .where('type', '=', 'asset.mint_failed')
          .execute();
        assert.ok(
          events.some((e) => JSON.parse(e.payload).asset.uid === uids[i]),
          `asset.mint_failed event for ${p}`,
        );
        assert.equal(images.hits.get(p), 1, `${p}: a permanent failure is not retried`);
      }
    });

    it('the gateway serves only valid CIDs it has; the file store only hashes it has; validators short-circuit', async () => {
      for (const p of ['/ipfs/not-a-cid', `/ipfs/${await rawCid(Buffer.from('never stored'))}`, `/files/${'0'.repeat(64)}`, '/files/xyz']) {
        const r = await fetchPath(p);
        assert.equal(r.status, 404, p);
        const body = await r.json();
        assert.equal(body.success, false);
        assert.equal(body.error.detail.code, 'not_found');
      }
      const cid = await rawCid(images.small);
      const first = await fetchPath(`/ipfs/${cid}`);
      assert.equal(first.headers.get('etag'), `"${cid}"`);
      assert.equal((await fetchPath(`/ipfs/${cid}`, { 'if-none-match': `"${cid}"` })).status, 304);
      assert.match(first.headers.get('content-security-policy') ?? '', /sandbox/);
    });
  });

  if (!opts.strict) return;
  describe(`image_url refused when it points into the network on ${db} (OUTBOUND_ALLOW_PRIVATE off)`, () => {
    let t: TestService;
    let images: ImageServer;
    let app: App;
    let collection: string;
    let user: string;

    before(async () => {
      images = await new ImageServer().start();
      t = await startTestService(db);
      app = await t.newApp('production');
      collection = await t.newCollection(app.uid, true);
      user = await newUser(app);
    });
    afterEach(() => {
      outboundTestHooks.resolve = null;
      outboundTestHooks.allowAddress = null;
    });
    after(async () => {
      await stopService(t);
      await images?.stop();
    });

    const refused = async (imageUrl: string, reason: RegExp) => {
      const r = await app.api.post('/asset', assetBody(user, collection, imageUrl, true));
      assert.equal(r.status, 400, `${imageUrl}: ${r.raw}`);
      assert.equal(r.body.error.type, 'validation_error');
      assert.equal(r.body.error.detail.field_name, 'data.image_url');
      assert.match(r.body.error.detail.message, reason, imageUrl);
    };

    it('loopback, private, IPv6 loopback, numeric and named forms are refused at request time with 400', async () => {
      await refused(images.url('/small.png'), /loopback address 127\.0\.0\.1/);
      await refused('http://10.0.0.1/', /private address 10\.0\.0\.1/);
      await refused('http://[::1]/', /loopback address ::1/);
      await refused('http://0x7f000001/', /loopback address 127\.0\.0\.1/);
      await refused(images.url('/small.png', 'localhost'), /loopback address/);
      await refused('http://169.254.169.254/latest/meta-data/', /link-local/);
      await refused('ipfs://bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e', /scheme ipfs: is not allowed/);
      assert.equal(images.hits.size, 0, 'nothing was fetched');
    });

    it('a public-looking name that resolves to a private address is refused', async () => {
      outboundTestHooks.resolve = async (host) =>
        host === 'images.example.test' ? [{ address: '10.20.30.40', family: 4 }] : dns.promises.lookup(host, { all: true });
      await refused('https://images.example.test/logo.png', /private address 10\.20\.30\.40/);
    });

    it('without store_image_on_ipfs nothing is fetched, so nothing is refused', async () => {
      const r = await app.api.post('/asset', assetBody(user, collection, 'http://10.0.0.1/logo.png', false));
      assert.equal(r.status, 201, r.raw);
    });

    it('a redirect from an allowed host to a private one is refused by the worker, and the asset fails visibly', async () => {
      // The test hook lets 127.0.0.1 stand in for a public host (there is no real one here); every other
      // loopback or private address stays forbidden, so the redirect target is judged like in production.
      outboundTestHooks.allowAddress = (ip) => ip === '127.0.0.1';
      outboundTestHooks.resolve = async (host) =>
        host === 'internal.example.test' ? [{ address: '10.9.9.9', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
      for (const [target, reason] of [
        ['http://169.254.169.254/latest/meta-data/', /refused: link-local address 169\.254\.169\.254/],
        [`http://internal.example.test:${images.port}/small.png`, /refused: private address 10\.9\.9\.9/],
        [`http://127.0.0.2:${images.port}/small.png`, /refused: loopback address 127\.0\.0\.2/],
      ] as const) {
        images.redirectTo = target;
        const hitsBefore = images.hits.get('/away.png') ?? 0;
        const uid = (await app.api.post('/asset', assetBody(user, collection, images.url('/away.png'), true))).body.data.uid as string;
        assert.ok(uid, 'accepted at request time: the first hop is allowed');
        const row = await waitFor(
          `asset ${uid} failed`,
          async () => {
            const r = await t.svc.ctx.db.selectFrom('assets').select(['mint_status', 'mint_error']).where('uid', '=', uid).executeTakeFirst();
            return r?.mint_status === 'failed' ? r : null;
          },
          30_000,
        );
        assert.match(row.mint_error ?? '', reason, target);
        assert.equal(images.hits.get('/away.png'), hitsBefore + 1, 'the first hop was requested');
      }
      assert.equal(images.hits.get('/small.png'), undefined, 'no redirect target was ever contacted');
    });
  });
}
