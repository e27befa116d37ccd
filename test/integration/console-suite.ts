// The console's JSON API (/console/api) and its files (/console) against a real service, run once per
// database: sessions, refusals, keyset pages over many rows, counts, details. The browser suite
// (test/browser) drives the same through the pages.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiClient, waitFor } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { seedAssets, type Seeded } from '../helpers/console-seed.js';
import { createApp } from '../../src/services/apps/registry.js';
import { signAppToken } from '../../src/services/apps/tokens.js';
import { newUid } from '../../src/util/ids.js';

interface Res {
  status: number;
  body: any;
  headers: Headers;
}

export function consoleSuite(db: 'sqlite' | 'postgres'): void {
  describe(`console API on ${db}`, () => {
    let t: TestService;
    let base: string;
    let cookie = '';
    let app: Awaited<ReturnType<TestService['newApp']>>;
    let collection: string;

    /** A request as the console's pages make it: same origin, with the session cookie. */
    const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res> => {
      const h: Record<string, string> = { origin: base, 'sec-fetch-site': 'same-origin', ...(cookie ? { cookie } : {}), ...headers };
      if (body !== undefined) h['content-type'] = 'application/json';
      const res = await fetch(`${base}/console/api${path}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
    };
    const data = async (path: string) => {
      const r = await call('GET', path);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.data;
    };
    const signIn = async () => {
      const r = await call('POST', '/session', { token: t.svc.ctx.installation.operatorToken });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r;
    };

    before(async () => {
      t = await startTestService(db);
      base = t.svc.url;
      app = await t.newApp();
      collection = await t.newCollection(app.uid, true);
    });
    after(async () => {
      await t?.stop();
    });

    it('serves the app under /console with a strict CSP; any page path gets the app; unknown API paths answer the envelope', async () => {
      const page = await fetch(`${base}/console`);
      assert.equal(page.status, 200, 'the console is built by npm run build');
      const html = await page.text();
      const csp = page.headers.get('content-security-policy')!;
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
      assert.doesNotMatch(html, /<script>|<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
      assert.doesNotMatch(html, /https?:\/\//, 'nothing from another origin');

      const deep = await fetch(`${base}/console/apps/${app.uid}/assets?status=minted`);
      assert.equal(deep.status, 200);
      assert.equal(await deep.text(), html);

      const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)![1];
      const js = await fetch(`${base}${script}`, { headers: { 'accept-encoding': 'gzip' } });
      assert.equal(js.status, 200);
      assert.match(js.headers.get('content-type')!, /javascript/);
      assert.match(js.headers.get('cache-control')!, /immutable/);
      assert.doesNotMatch(
        await js.text(),
        /https?:\/\/(?!www\.w3\.org)[a-z0-9.-]+\.[a-z]{2,}\/[^"'\s]*\.(js|css|woff2?)/i,
        'loads no remote script, style or font',
      );

      assert.equal((await fetch(`${base}/console/missing.js`)).status, 404);
      const api = await fetch(`${base}/console/api/nothing-here`);
      assert.equal(api.status, 404);
      assert.deepEqual(await api.json(), { success: false, error: { type: 'client_error', detail: { code: 'not_found', message: 'Not Found' } } });
      // The console's routes are not part of the public API's document.
      const doc = await (await fetch(`${base}/openapi.json`)).json();
      assert.ok(!Object.keys(doc.paths).some((p) => p.startsWith('/console')));
    });

    it('signs in with the operator token only; the session cookie is HttpOnly, SameSite=Strict, scoped to /console and expires', async () => {
      assert.deepEqual((await call('GET', '/session')).body.data, { signed_in: false, expires_at: null });
      const wrong = await call('POST', '/session', { token: 'nope' });
      assert.equal(wrong.status, 401);
      assert.deepEqual(wrong.body.error.detail, { code: 'invalid_token', field_name: 'token', message: 'That is not the operator token.' });
      const empty = await call('POST', '/session', {});
      assert.equal(empty.status, 400);
      assert.equal(empty.body.error.type, 'validation_error');

      const r = await signIn();
      const set = r.headers.get('set-cookie')!;
      assert.match(set, /^mw_console=[A-Za-z0-9_-]{43}; /);
      assert.match(set, /; Path=\/console(;|$)/);
      assert.match(set, /; HttpOnly(;|$)/);
      assert.match(set, /; SameSite=Strict(;|$)/);
      assert.match(set, /; Max-Age=43200(;|$)/);
      assert.doesNotMatch(set, /Secure/, 'PUBLIC_URL is http');
      cookie = set.split(';')[0];
      const s = (await call('GET', '/session')).body.data;
      assert.equal(s.signed_in, true);
      assert.ok(Math.abs(Date.parse(s.expires_at) - Date.now() - 12 * 3600_000) < 60_000);
      assert.equal(r.headers.get('cache-control'), 'no-store');
    });

    it('refuses data requests without a valid session, and requests another site could have made', async () => {
      const withoutCookie = await call('GET', '/apps', undefined, { cookie: '' });
      assert.equal(withoutCookie.status, 401);
      assert.equal(withoutCookie.body.error.detail.code, 'unauthorized');
      assert.equal((await call('GET', '/apps', undefined, { cookie: `mw_console=${'x'.repeat(43)}` })).status, 401);

      const foreign = await call('POST', '/apps', { name: 'Evil' }, { origin: 'https://evil.example' });
      assert.equal(foreign.status, 403);
      assert.equal(foreign.body.error.detail.code, 'cross_site_request');
      assert.equal((await call('GET', '/apps', undefined, { 'sec-fetch-site': 'cross-site' })).status, 403);
      assert.equal((await call('GET', '/apps', undefined, { 'sec-fetch-site': 'same-site' })).status, 403);
      // Signing in from another site is refused too (no login CSRF).
      assert.equal(
        (await call('POST', '/session', { token: t.svc.ctx.installation.operatorToken }, { origin: 'https://evil.example', cookie: '' })).status,
        403,
      );
      assert.ok(!(await t.svc.ctx.db.selectFrom('apps').select('uid').where('name', '=', 'Evil').executeTakeFirst()));

      // Scripts may use the operator token itself instead of a session; an App's credentials are no use.
      const bearer = await fetch(`${base}/console/api/apps`, { headers: { authorization: `Bearer ${t.svc.ctx.installation.operatorToken}` } });
      assert.equal(bearer.status, 200);
      const appToken = await fetch(`${base}/console/api/apps`, { headers: { authorization: `Bearer ${app.api.token}`, 'x-api-key': app.apiKey } });
      assert.equal(appToken.status, 401);
    });

    it('creates an App (key and secret once) and a collection, which deploys', async () => {
      const created = await call('POST', '/apps', { name: 'Console App', environment: 'production' });
      assert.equal(created.status, 201);
      const { uid, api_key, api_secret } = created.body.data;
      assert.match(api_key, /^mw_/);
      const listed = (await data('/apps')).find((a: any) => a.uid === uid);
      assert.deepEqual(Object.keys(listed).sort(), ['api_key', 'created_at', 'environment', 'name', 'uid']);
      assert.equal(listed.environment, 'production');
      assert.ok(!JSON.stringify(await data('/apps')).includes(api_secret), 'the secret is never listed');

      const bad = await call('POST', `/apps/${uid}/collections`, { name: 'X', symbol: 'not ok!' });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.detail.field_name, 'symbol');
      const c = await call('POST', `/apps/${uid}/collections`, { name: 'Shields', symbol: 'SHD', description: 'round', editable_assets: true });
      assert.equal(c.status, 201);
      const row = () => data(`/apps/${uid}/collections`).then((l) => l.find((x: any) => x.uid === c.body.data.uid));
      assert.equal((await row()).status, 'deploying');
      await waitFor('collection deployed', async () => (await row()).status === 'deployed', 30_000);
      assert.match((await row()).contract_address, /^0x[0-9a-fA-F]{40}$/);
      assert.equal((await call('GET', `/apps/${newUid()}/collections`)).status, 404);
    });

    it("a collection's options: the form's fields at creation, its page, and a change (empty fields clear)", async () => {
      const uid = (await call('POST', '/apps', { name: 'Options App', environment: 'development' })).body.data.uid;
      const receiver = '0x00000000000000000000000000000000000000dd';
      const form = { royalty_receiver: receiver, royalty_bps: 750, image_url: 'https://example.com/i.png', external_url: '' };
      const c = await call('POST', `/apps/${uid}/collections`, { name: 'Trophies', symbol: 'TRO', soulbound: true, ...form });
      assert.equal(c.status, 201, JSON.stringify(c.body));
      const page = `/apps/${uid}/collections/${c.body.data.uid}`;
      const shown = await data(page);
      assert.equal(shown.soulbound, true);
      assert.equal(shown.royalty_receiver, receiver);
      assert.equal(shown.royalty_bps, 750);
      assert.equal(shown.image_url, 'https://example.com/i.png');
      assert.equal(shown.external_url, null, 'an empty field is none');
      assert.match(shown.contract_uri, /\/files\/[0-9a-f]{64}$/);
      const bad = await call('PATCH', page, { royalty_receiver: receiver, royalty_bps: 5000 });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.detail.field_name, 'royalty_bps');
      assert.deepEqual(await data(page), shown, 'a refused change changes nothing');
      const changed = await call('PATCH', page, {
        description: 'Won',
        royalty_receiver: '',
        royalty_bps: null,
        image_url: '',
        external_url: 'https://example.com',
      });
      assert.equal(changed.status, 200, JSON.stringify(changed.body));
      const after = await data(page);
      assert.deepEqual(
        [after.description, after.royalty_receiver, after.royalty_bps, after.image_url, after.external_url],
        ['Won', null, null, null, 'https://example.com'],
      );
      assert.notEqual(after.contract_uri, shown.contract_uri);
      assert.equal(after.soulbound, true, 'fixed');
      assert.equal((await call('GET', `/apps/${uid}/collections/${newUid()}`)).status, 404);
      assert.equal((await call('PATCH', `/apps/${uid}/collections/${newUid()}`, { description: 'x' })).status, 404);
    });

    it('an ERC-1155 collection from the form, its items, an item with its mints and holders, and a user’s holdings', async () => {
      const c = await call('POST', `/apps/${app.uid}/collections`, { name: 'Potions', symbol: 'POT', standard: 'ERC1155', editable_assets: false });
      assert.equal(c.status, 201, JSON.stringify(c.body));
      const page = `/apps/${app.uid}/collections/${c.body.data.uid}`;
      await waitFor('items collection deployed', async () => (await data(page)).status === 'deployed', 30_000);
      assert.equal((await data(page)).type, 'ERC1155');
      assert.equal((await data(`/apps/${app.uid}/collections`)).find((x: any) => x.uid === collection).type, 'ERC721');
      // Royalty and soulbound belong to ERC-721 collections: the form sends neither for ERC-1155, the service refuses them.
      const refused = await call('POST', `/apps/${app.uid}/collections`, { name: 'X', symbol: 'X', standard: 'ERC1155', soulbound: true });
      assert.equal(refused.status, 400, JSON.stringify(refused.body));

      const potion = { name: 'Potion', image_url: 'https://example.com/p.png', store_image_on_ipfs: false };
      const item = (await app.api.post('/item', { collection_uid: c.body.data.uid, item_external_id: 'p', max_supply: '100000000000000000000', data: potion }))
        .body.data.uid;
      const [ann, bob] = [(await app.api.post('/user', {})).body.data.uid, (await app.api.post('/user', {})).body.data.uid];
      const big = '12345678901234567890'; // beyond 2^53: a string, shown exactly
      const mints = [
        (await app.api.post('/item/mint', { item_uid: item, to_user_uid: ann, amount: 1500, nonce: 1 })).body.data.uid,
        (await app.api.post('/item/mint', { item_uid: item, to_user_uid: bob, amount: big, nonce: 2 })).body.data.uid,
      ];
      for (const m of mints) await waitFor('item minted', async () => (await app.api.get(`/item/mint/${m}`)).body.data.status === 'done', 60_000);
      const listed = await data(`${page}/items`);
      assert.deepEqual(
        listed.map((i: any) => [i.uid, i.minted_supply, i.max_supply]),
        [[item, '12345678901234569390', '100000000000000000000']],
      );
      const detail = await data(`/apps/${app.uid}/items/${item}`);
      assert.equal(detail.item.uid, item);
      assert.equal(detail.collection_name, 'Potions');
      assert.deepEqual(detail.item.metadata.name, 'Potion');
      assert.deepEqual(
        detail.holders.map((h: any) => [h.user_uid, h.amount]),
        [
          [bob, big],
          [ann, 1500],
        ],
        'largest first, amounts exact',
      );
      assert.deepEqual(detail.mints.map((m: any) => m.uid).sort(), [...mints].sort());
      assert.deepEqual(await data(`/apps/${app.uid}/users/${ann}/items`), [
        { item_uid: item, name: 'Potion', collection_uid: c.body.data.uid, token_id: detail.item.token_id, amount: 1500 },
      ]);
      // Another App sees none of it.
      const other = (await call('POST', '/apps', { name: 'Other', environment: 'development' })).body.data.uid;
      assert.equal((await call('GET', `/apps/${other}/items/${item}`)).status, 404);
      assert.equal((await call('GET', `/apps/${other}/collections/${c.body.data.uid}/items`)).status, 404);
      assert.deepEqual(await data(`/apps/${other}/users/${ann}/items`), []);
    });

    let seeded: Seeded;
    let bigApp = '';

    it('pages through users and assets with keyset cursors: each row once, newest first, also among equal timestamps', async () => {
      bigApp = (await createApp(t.svc.ctx, 'Paged', 'development')).uid;
      seeded = await seedAssets(t.svc.ctx, bigApp, 1234, { users: 40, spanHours: 12 });
      // Users created in the same microsecond: the uid breaks the tie.
      const same = '2020-01-01T00:00:00.000000Z';
      const twins = Array.from({ length: 5 }, () => newUid());
      await t.svc.ctx.db
        .insertInto('users')
        .values(
          twins.map((uid, i) => ({
            uid,
            app_uid: bigApp,
            email: `twin${i}@example.com`,
            user_external_id: null,
            wallet_address: null,
            wallet_created_at: null,
            created_at: same,
          })),
        )
        .execute();

      const all = async (path: string, limit: number) => {
        const rows: any[] = [];
        let cursor: string | null = null;
        do {
          const page: any = await data(`${path}${path.includes('?') ? '&' : '?'}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
          assert.ok(page.items.length <= limit);
          rows.push(...page.items);
          cursor = page.next_cursor;
        } while (cursor);
        return rows;
      };
      const users = await all(`/apps/${bigApp}/users`, 3);
      assert.equal(users.length, 45);
      assert.equal(new Set(users.map((u) => u.uid)).size, 45);
      assert.deepEqual(
        users
          .slice(-5)
          .map((u) => u.uid)
          .sort(),
        [...twins].sort(),
      );

      const assets = await all(`/apps/${bigApp}/assets`, 200);
      assert.equal(assets.length, 1234);
      assert.equal(new Set(assets.map((a) => a.uid)).size, 1234);
      assert.equal(assets[0].uid, seeded.newestAssetUid);
      assert.ok(assets.every((a, i) => i === 0 || assets[i - 1].created_at >= a.created_at));
      assert.deepEqual(Object.keys(assets[0]).sort(), [
        'asset_external_id',
        'collection_name',
        'collection_uid',
        'created_at',
        'error',
        'image',
        'name',
        'owner_address',
        'owner_user_uid',
        'status',
        'token_id',
        'uid',
      ]);

      const byCollection = await all(`/apps/${bigApp}/assets?collection=${seeded.collectionUid}&status=failed`, 2);
      assert.equal(byCollection.length, assets.filter((a) => a.status === 'failed').length);
      assert.ok(byCollection.length > 0 && byCollection.every((a) => a.status === 'failed' && a.error === 'seeded failure'));
      assert.ok(byCollection.every((a, i) => i === 0 || byCollection[i - 1].token_id > a.token_id));
      for (const status of ['not_minted', 'minted', 'burned']) {
        const rows = await all(`/apps/${bigApp}/assets?status=${status}`, 200);
        assert.equal(rows.length, assets.filter((a) => a.status === status).length, status);
      }

      const one = assets[77];
      assert.deepEqual(
        (await data(`/apps/${bigApp}/assets?q=${one.uid}`)).items.map((a: any) => a.uid),
        [one.uid],
      );
      assert.deepEqual(
        (await data(`/apps/${bigApp}/assets?q=${one.asset_external_id}`)).items.map((a: any) => a.uid),
        [one.uid],
      );
      assert.deepEqual((await data(`/apps/${app.uid}/assets?q=${one.uid}`)).items, [], 'another App sees nothing of it');
      assert.deepEqual(
        (await data(`/apps/${bigApp}/users?q=twin3@example.com`)).items.map((u: any) => u.uid),
        [twins[3]],
      );
      assert.equal((await data(`/apps/${bigApp}/users?q=twin`)).items.length, 5, 'email prefix');
      assert.equal((await data(`/apps/${bigApp}/users?q=seed-1`)).items.length, 11, 'external id prefix: seed-1, seed-10..19');
      assert.deepEqual(
        (await data(`/apps/${bigApp}/users?q=${twins[0]}`)).items.map((u: any) => u.uid),
        [twins[0]],
      );

      const badCursor = await call('GET', `/apps/${bigApp}/assets?cursor=bm9wZQ`);
      assert.equal(badCursor.status, 400);
      assert.deepEqual(badCursor.body.error.detail, {
        code: 'invalid',
        field_name: 'cursor',
        message: 'Invalid cursor: take next_cursor from the previous page.',
      });
      assert.equal((await call('GET', `/apps/${bigApp}/assets?status=lost`)).status, 400);
      assert.equal((await call('GET', `/apps/${bigApp}/assets?limit=1000`)).status, 400);
    });

    it("counts an App's users, assets, transfers, burns, claims; charts mints and sales over time", async () => {
      const o = await data(`/apps/${bigApp}/overview`);
      assert.equal(o.app.uid, bigApp);
      const n = 1234;
      const failed = Array.from({ length: n }, (_, i) => i % 200 === 4).filter(Boolean).length;
      const pending = Array.from({ length: n }, (_, i) => i % 200 < 4).filter(Boolean).length;
      assert.deepEqual(o.counts, {
        users: 45,
        collections: 1,
        assets: n,
        assets_minted: n - failed - pending,
        assets_pending: pending,
        assets_failed: failed,
        assets_burned: Array.from({ length: n }, (_, i) => i % 200 === 5).filter(Boolean).length,
        transfers: 0,
        transfers_pending: 0,
        burns: 0,
        rewards: 0,
        allocations: 0,
        claims: 0,
        webhook_failing: 0,
      });
      const day = await data(`/apps/${bigApp}/activity?range=24h`);
      assert.equal(day.bucket, 'hour');
      assert.equal(day.points.length, 24);
      assert.equal(
        day.points.reduce((s: number, p: any) => s + p.mints, 0),
        o.counts.assets_minted,
      );
      let sales = 0;
      for (let i = 0; i < n; i++) if (i % 3 === 0 && !(i % 200 < 5)) sales += (i % 50) + 0.99;
      const charted = day.points.reduce((s: number, p: any) => s + p.sales_usd, 0);
      assert.ok(Math.abs(charted - sales) < 0.25, `sales ${charted} vs ${sales}`);
      const month = await data(`/apps/${bigApp}/activity?range=30d`);
      assert.equal(month.points.length, 30);
      assert.equal(
        month.points.reduce((s: number, p: any) => s + p.mints, 0),
        o.counts.assets_minted,
      );
      const status = await data('/status');
      assert.equal(status.ready, true);
      assert.equal(status.relayers.length, 2);
      assert.equal(typeof status.chain.block, 'number');
    });

    it('shows an asset with its metadata, token URI, transactions and history, and a user with everything of theirs', async () => {
      const user = (await app.api.post('/user', { email: 'detail@example.com' })).body.data.uid;
      const created = await app.api.post('/asset', {
        user_uid: user,
        collection_uid: collection,
        asset_external_id: 'detail-1',
        sale_price_in_usd: 3,
        data: { name: 'Helmet', unique_name: false, image_url: 'https://example.com/helmet.png', store_image_on_ipfs: false, attributes: [] },
      });
      assert.equal(created.status, 201, created.raw);
      const uid = created.body.data.uid;
      const detail = await waitFor('minted', async () => {
        const d = await data(`/apps/${app.uid}/assets/${uid}`);
        return d.asset.status === 'minted' ? d : null;
      });
      assert.equal(detail.asset.image, 'https://example.com/helmet.png');
      assert.equal(detail.asset.owner_user_uid, user);
      assert.match(detail.asset.token_uri, new RegExp(`^${base}/metadata/${collection}/\\d+$`));
      assert.match(detail.asset.metadata.name, /^Helmet/);
      assert.equal(detail.asset.sale_price_in_usd, 3);
      assert.equal(detail.transactions.length, 1);
      assert.equal(detail.transactions[0].kind, 'mint');
      assert.equal(detail.transactions[0].status, 'mined');
      assert.equal(detail.transactions[0].explorer_url, `${base}/explorer/tx/${detail.transactions[0].hash}`);
      assert.deepEqual(
        detail.history.map((h: any) => h.event),
        ['created', 'mint sent', 'minted'],
      );
      assert.equal((await fetch(detail.transactions[0].explorer_url)).status, 200);

      const u = await data(`/apps/${app.uid}/users/${user}`);
      assert.equal(u.user.uid, user);
      assert.equal(u.user.wallets.length, 1);
      assert.deepEqual(
        u.assets.map((a: any) => a.uid),
        [uid],
      );
      assert.deepEqual([u.transfers, u.burns, u.allocations, u.claims], [[], [], [], []]);

      // A transfer: its relayed transaction and the steps join the asset's page, and the user's.
      const tr = await app.api.post('/transfer', { asset_uid: uid, from_user_uid: user, to_address: '0x000000000000000000000000000000000000dEaD' });
      assert.equal(tr.status, 201, tr.raw);
      const moved = await waitFor('transferred', async () => {
        const d = await data(`/apps/${app.uid}/assets/${uid}`);
        return d.history.some((h: any) => h.event === 'transferred') ? d : null;
      });
      assert.deepEqual(
        moved.transactions.map((x: any) => x.kind),
        ['mint', 'transfer'],
      );
      assert.deepEqual(
        moved.history.map((h: any) => h.event),
        ['created', 'mint sent', 'minted', 'transfer requested', 'transferred'],
      );
      assert.equal(moved.asset.owner_user_uid, null);
      assert.equal(moved.asset.owner_address, '0x000000000000000000000000000000000000dEaD');
      assert.deepEqual(
        (await data(`/apps/${app.uid}/users/${user}`)).transfers.map((x: any) => x.status),
        ['done'],
      );
      assert.equal((await call('GET', `/apps/${app.uid}/assets/${newUid()}`)).status, 404);
      assert.equal((await call('GET', `/apps/${bigApp}/assets/${uid}`)).status, 404, 'another App: not found');
    });

    it('rotates the API secret (the new one works at once, the old one no more) and makes bearer tokens', async () => {
      const key = await data(`/apps/${app.uid}/keys`);
      assert.equal(key.api_key, app.apiKey);
      assert.equal((await app.api.get('/collection/' + collection)).status, 200);
      const r = await call('POST', `/apps/${app.uid}/keys/rotate`, {});
      assert.equal(r.status, 200);
      assert.equal(r.body.data.api_key, app.apiKey);
      assert.equal((await app.api.get('/collection/' + collection)).status, 401, 'the old secret no longer signs');
      const fresh = new ApiClient(`${base}/v1`, app.apiKey, await signAppToken(app.apiKey, r.body.data.api_secret));
      assert.equal((await fresh.get('/collection/' + collection)).status, 200);
      const tok = await call('POST', `/apps/${app.uid}/keys/token`, { expires_in_seconds: 600 });
      const viaToken = new ApiClient(`${base}/v1`, app.apiKey, tok.body.data.token);
      assert.equal((await viaToken.get('/collection/' + collection)).status, 200);
      app = { ...app, api: fresh, apiSecret: r.body.data.api_secret };
    });

    it('answers webhook actions without a webhook in the envelope', async () => {
      assert.deepEqual((await data(`/apps/${app.uid}/webhook/settings`)).webhook, null);
      const test = await call('POST', `/apps/${app.uid}/webhook/test`, {});
      assert.equal(test.status, 409);
      assert.equal(test.body.error.detail.code, 'webhook_not_configured');
      assert.deepEqual(await data(`/apps/${app.uid}/webhook/log`), { items: [], next_cursor: null });
    });

    it('signs out: the cookie is cleared and the session refused from then on', async () => {
      const r = await call('DELETE', '/session');
      assert.equal(r.status, 200);
      assert.match(r.headers.get('set-cookie')!, /^mw_console=; Path=\/console; Max-Age=0/);
      assert.equal((await call('GET', '/apps')).status, 401);
      cookie = '';
    });

    it('lists 100,000 assets of one App: a page in well under 300 ms, on the first page and deep in', async () => {
      await signIn().then((r) => (cookie = r.headers.get('set-cookie')!.split(';')[0]));
      const huge = (await createApp(t.svc.ctx, 'Huge', 'development')).uid;
      await seedAssets(t.svc.ctx, huge, 100_000);
      const time = async (path: string) => {
        await data(path);
        const t0 = performance.now();
        const page = await data(path);
        return { ms: performance.now() - t0, page };
      };
      const first = await time(`/apps/${huge}/assets`);
      let cursor = first.page.next_cursor;
      for (let i = 0; i < 40; i++) cursor = (await data(`/apps/${huge}/assets?limit=200&cursor=${encodeURIComponent(cursor)}`)).next_cursor;
      const deep = await time(`/apps/${huge}/assets?cursor=${encodeURIComponent(cursor)}`);
      const failed = await time(`/apps/${huge}/assets?status=failed`);
      const none = await time(`/apps/${huge}/assets?status=transferring`);
      const overview = await time(`/apps/${huge}/overview`);
      console.log(
        `${db}, 100,000 assets: first page ${first.ms.toFixed(1)} ms, page 160 ${deep.ms.toFixed(1)} ms, failed ${failed.ms.toFixed(1)} ms, no match ${none.ms.toFixed(1)} ms, overview ${overview.ms.toFixed(1)} ms`,
      );
      assert.equal(first.page.items.length, 50);
      assert.equal(deep.page.items.length, 50);
      // An order of magnitude, what a busy machine meets too: a page that read the App's 100,000 assets
      // would take seconds. The plans themselves are query-plans.test.ts's; speed is the bench's.
      for (const [what, ms] of [
        ['first page', first.ms],
        ['deep page', deep.ms],
        ['failed', failed.ms],
        ['no match', none.ms],
      ] as const)
        assert.ok(ms < 3000, `${what}: ${ms} ms`);
    });
  });
}
