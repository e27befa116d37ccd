// How far webhooks trail the mints: 1,600 assets over 8 Apps (200 each) created in one burst against the
// real service (`node dist/main.js`, workers on), each App's webhook subscribed to asset.minted on a
// local receiver. Measured: the moment the API first shows every asset minted (GET /asset?user_uid
// polled every 100 ms), and the arrival of the last asset.minted; the lag is the difference. One JSON
// line per database.
//   node --import tsx bench/webhook-lag.ts      (BENCH_DB=sqlite|postgres for one; BENCH_LAG_PER_APP=200)
import fs from 'node:fs';
import path from 'node:path';
import { signAppToken } from '../src/services/apps/tokens.js';
import { ApiClient, waitFor } from '../test/helpers/env.js';
import { LoadReceiver } from '../test/helpers/webhook-load.js';
import { dbsFromArgs, emit, inParallel, startService } from './lib.js';

const APPS = 8;
const PER_APP = Number(process.env.BENCH_LAG_PER_APP ?? 200);

for (const db of dbsFromArgs()) {
  const receiver = await new LoadReceiver().start();
  const svc = await startService(db, { OUTBOUND_ALLOW_PRIVATE: 'true' });
  try {
    const operator = fs.readFileSync(path.join(svc.dataDir, 'operator.token'), 'utf8').trim();
    const admin = new ApiClient(`${svc.base}/admin/v1`, undefined, operator);
    const apps: { uid: string; api: ApiClient; collection: string; user: string }[] = [];
    for (let i = 0; i < APPS; i++) {
      const a = (await admin.post('/apps', { name: `lag ${i}`, environment: 'development' })).body.data;
      const collection = (await admin.post(`/apps/${a.uid}/collections`, { name: `Lag ${i}`, symbol: 'LAG' })).body.data.uid as string;
      const hook = await admin.call('PUT', `/apps/${a.uid}/webhook`, { url: receiver.url(a.uid), events: ['asset.minted'] });
      if (hook.status >= 300) throw new Error(`PUT webhook: ${hook.status} ${hook.raw}`);
      const api = new ApiClient(`${svc.base}/v1`, a.api_key, await signAppToken(a.api_key, a.api_secret));
      const user = (await api.post('/user', {})).body.data.uid as string;
      apps.push({ uid: a.uid, api, collection, user });
    }
    for (const a of apps) {
      await waitFor('collection deployed', async () => (await a.api.get(`/collection/${a.collection}`)).body?.data?.status === 'deployed', 60_000, 200);
      await a.api.get(`/deposit?user_uid=${a.user}&collection_uid=${a.collection}`); // the wallet exists before the burst
    }

    const t0 = performance.now();
    await inParallel(APPS * PER_APP, 64, async (i) => {
      const a = apps[i % APPS];
      const r = await a.api.post('/asset', {
        user_uid: a.user,
        collection_uid: a.collection,
        asset_external_id: `lag-${i}`,
        data: { name: 'Lag', unique_name: false, image_url: 'https://example.com/l.png', store_image_on_ipfs: false },
      });
      if (r.status !== 201) throw new Error(`POST /asset: ${r.status} ${r.raw}`);
    });
    const accepted = performance.now();
    let allMinted = 0;
    await waitFor(
      'every asset minted (API)',
      async () => {
        const lists = await Promise.all(apps.map((a) => a.api.get(`/asset?user_uid=${a.user}`).then((r) => r.body.data as { is_minted: boolean }[])));
        const done = lists.every((l) => l.length === PER_APP && l.every((x) => x.is_minted));
        if (done) allMinted = performance.now();
        return done;
      },
      300_000,
      100,
    );
    await Promise.race([
      Promise.all(apps.map((a) => receiver.until(a.uid, PER_APP))),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`webhooks: ${receiver.count(null)} of ${APPS * PER_APP} arrived within 120 s`)), 120_000)),
    ]);
    const last = Math.max(...apps.map((a) => receiver.lastAt.get(a.uid)!));
    const s = (ms: number) => Math.round(ms) / 1000;
    emit({
      bench: 'webhook_lag',
      db,
      apps: APPS,
      assets: APPS * PER_APP,
      accept_s: s(accepted - t0),
      all_minted_s: s(allMinted - t0),
      last_webhook_s: s(last - t0),
      // Negative: the last webhook came before the poll saw the last mint.
      lag_s: s(last - allMinted),
    });
  } finally {
    await svc.stop();
    await receiver.stop();
  }
}
