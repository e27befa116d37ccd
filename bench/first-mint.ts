// The first mint of a new collection: an asset created the moment its collection is created, so that it
// waits for the deployment. How long after the collection shows deployed the asset shows minted,
// against the baseline of the same run: an asset created in the Demo collection, deployed long before,
// from its create to minted. Both for a user who already has a wallet (nothing else to wait for).
// Times are read by polling the API every 10 ms. One JSON line per database: medians of the rounds, and
// the slowest round after the deployment (a mint that read its collection deploying waits for a wake-up).
//   node --import tsx bench/first-mint.ts      (BENCH_DB=sqlite|postgres for one; BENCH_FIRST_MINT_ROUNDS=7)
import fs from 'node:fs';
import path from 'node:path';
import { ApiClient, waitFor } from '../test/helpers/env.js';
import { benchAssetBody, dbsFromArgs, emit, readDemo, startService } from './lib.js';

const ROUNDS = Number(process.env.BENCH_FIRST_MINT_ROUNDS ?? 7);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

for (const db of dbsFromArgs()) {
  const svc = await startService(db);
  try {
    const operator = fs.readFileSync(path.join(svc.dataDir, 'operator.token'), 'utf8').trim();
    const admin = new ApiClient(`${svc.base}/admin/v1`, undefined, operator);
    const appUid = readDemo(svc.dataDir).app;
    const user = (await svc.api.post('/user', {})).body.data.uid as string;
    let n = 0;
    const create = async (collection: string) => {
      const r = await svc.api.post('/asset', benchAssetBody(user, collection, `first-mint-${n++}`));
      if (r.status !== 201) throw new Error(`POST /asset: ${r.status} ${r.raw}`);
      return r.body.data.uid as string;
    };
    const isMinted = async (asset: string) => (await svc.api.get(`/asset/${asset}`)).body.data.is_minted === true;
    // The user's wallet is made by their first mint: before the rounds.
    const first = await create(svc.collection);
    await waitFor('the first mint', () => isMinted(first), 60_000, 10);

    const afterDeploy: number[] = [];
    const deployedAlready: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const c = await admin.post(`/apps/${appUid}/collections`, { name: `First ${round}`, symbol: 'FM' });
      if (c.status !== 201) throw new Error(`POST collections: ${c.status} ${c.raw}`);
      const asset = await create(c.body.data.uid);
      let deployedAt = 0;
      await waitFor(
        'minted in the new collection',
        async () => {
          if (!deployedAt && (await svc.api.get(`/collection/${c.body.data.uid}`)).body.data.status === 'deployed') deployedAt = Date.now();
          return deployedAt > 0 && (await isMinted(asset));
        },
        60_000,
        10,
      );
      afterDeploy.push(Date.now() - deployedAt);
      const t0 = Date.now();
      const baseline = await create(svc.collection);
      await waitFor('minted in the Demo collection', () => isMinted(baseline), 60_000, 10);
      deployedAlready.push(Date.now() - t0);
    }
    const a = median(afterDeploy);
    const b = median(deployedAlready);
    emit({
      bench: 'first_mint',
      db,
      rounds: ROUNDS,
      after_deploy_ms: a,
      deployed_collection_ms: b,
      ratio: +(a / Math.max(1, b)).toFixed(2),
      // A mint claimed while its collection deployed waits for the deployment's wake-up: the slowest round shows a missed one.
      max_after_deploy_ms: Math.max(...afterDeploy),
      each_after_deploy_ms: afterDeploy,
      each_deployed_collection_ms: deployedAlready,
    });
  } finally {
    await svc.stop();
  }
}
