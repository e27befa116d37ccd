// Lists never truncate silently: a user with 2,500 assets pages through all of them with the Link
// header, while the plain call (as the SDKs make it) still answers an array — the first page.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiClient, type ApiResponse } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';

const ASSETS = 2500;

/** The URL of rel="next" in a Link header, or null. */
function nextLink(link: string | null): string | null {
  const m = link ? /<([^>]+)>;\s*rel="next"/.exec(link) : null;
  return m ? m[1] : null;
}

for (const db of ['sqlite', 'postgres'] as const) {
  describe(`paged lists (${db})`, () => {
    let t: TestService;
    let api: ApiClient;
    let user: string;
    const created = new Set<string>();
    before(async () => {
      t = await startTestService(db);
      const app = await t.newApp();
      api = app.api;
      const collection = await t.newCollection(app.uid);
      user = (await api.post('/user', {})).body.data.uid;
      let next = 0;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (next < ASSETS) {
            const i = next++;
            const r = await api.post('/asset', {
              user_uid: user,
              collection_uid: collection,
              asset_external_id: `page-${i}`,
              data: { name: `Item ${i}`, unique_name: false, image_url: 'https://example.com/i.png', store_image_on_ipfs: false },
            });
            assert.equal(r.status, 201, r.raw);
            created.add(r.body.data.uid);
          }
        }),
      );
    });
    after(() => t?.stop());

    it('the plain call answers the first 1,000 as an array, with a Link to the rest', async () => {
      const r = await api.get(`/asset?user_uid=${user}`);
      assert.equal(r.status, 200);
      assert.ok(Array.isArray(r.body.data));
      assert.equal(r.body.data.length, 1000);
      assert.match(r.headers.get('link') ?? '', /^<http:\/\/127\.0\.0\.1:\d+\/v1\/asset\?user_uid=\d+&cursor=[\w-]+>; rel="next"$/);
    });

    it('following the Link headers visits every asset once, newest first', async () => {
      for (const limit of [1000, 333]) {
        const seen: { uid: string; created_at: string }[] = [];
        let url: string | null = `${api.base}/asset?user_uid=${user}&limit=${limit}`;
        let pages = 0;
        while (url) {
          // Typed: `url` is narrowed through this loop's own assignments, which tsc cannot infer around.
          const page: ApiClient = new ApiClient(url, api.apiKey, api.token);
          const r: ApiResponse<{ data: { uid: string; created_at: string }[] }> = await page.get('');
          assert.equal(r.status, 200, r.raw);
          assert.ok(r.body.data.length <= limit);
          seen.push(...r.body.data);
          url = nextLink(r.headers.get('link'));
          pages++;
        }
        assert.equal(pages, Math.ceil(ASSETS / limit));
        assert.equal(seen.length, ASSETS);
        assert.deepEqual(new Set(seen.map((a) => a.uid)), created);
        for (let i = 1; i < seen.length; i++) assert.ok(seen[i - 1].created_at >= seen[i].created_at, 'newest first');
      }
    });

    it('a short list has no Link; a bad cursor or limit is a validation error', async () => {
      const other = (await api.post('/user', {})).body.data.uid;
      const r = await api.get(`/asset?user_uid=${other}`);
      assert.deepEqual(r.body.data, []);
      assert.equal(r.headers.get('link'), null);
      for (const q of ['cursor=nonsense', 'limit=0', 'limit=1001', 'limit=x']) {
        const bad = await api.get(`/asset?user_uid=${user}&${q}`);
        assert.equal(bad.status, 400, q);
        assert.equal(bad.body.success, false);
      }
      for (const p of ['/transfer', '/burn', '/reward/allocation', '/reward/claim']) {
        const l = await api.get(`${p}?user_uid=${user}&limit=5`);
        assert.equal(l.status, 200, `${p}: ${l.raw}`);
        assert.deepEqual(l.body.data, []);
      }
    });
  });
}
