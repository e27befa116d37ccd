// test:exclusive — measures timing; run with the machine to itself (scripts/run-integration.mjs).
// GET /asset/<uid> answered from memory (src/services/assets/cache.ts) is never older than the database:
// - SQLite, `npm start` as shipped (the workers in their thread): the workers' mint and the API's own
//   edit are seen by the very next read;
// - PostgreSQL, two processes: one with the workers, one API only. A change committed through the
//   first (a mint, an edit), or by hand in SQL, is seen by the next read of the second, which learns of
//   it only from the database's notifications.
// Each case first checks that the cache answers at all (the hit counter of /metrics moves), so a cache
// that never hits cannot pass for a coherent one.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { startService, stopAll } from '../helpers/process-group.js';
import { ApiClient, demoEnv, freePort, freshPostgres, tempDir, waitFor } from '../helpers/env.js';

async function healthy(base: string): Promise<void> {
  await waitFor(`${base} healthy`, async () => (await fetch(`${base}/health`).catch(() => null))?.status === 200, 90_000, 100);
}

/** This process's cached answers so far (mintworks_asset_reads_total{result="hit"}). */
async function hits(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = /^mintworks_asset_reads_total\{result="hit"\} (\d+)$/m.exec(text);
  assert.ok(m, 'the hit counter is exported');
  return Number(m[1]);
}

const assetBody = (user: string, collection: string, ext: string) => ({
  user_uid: user,
  collection_uid: collection,
  asset_external_id: ext,
  data: { name: 'Cached Sword', unique_name: false, image_url: 'https://example.com/sword.png', store_image_on_ipfs: false },
});
const editBody = { data: { name: 'Edited Sword', unique_name: false, image_url: 'https://example.com/edited.png' } };

/**
 * The shared scenario: `writer` takes the writes, `reader` the cached reads (the same process on SQLite).
 * The list of a user's assets is never cached: once it shows a change, the cached read must too.
 */
async function coherentReads(writer: ApiClient, reader: ApiClient, readerBase: string, collection: string): Promise<void> {
  const user = (await writer.post('/user', {})).body.data.uid as string;
  const created = await writer.post('/asset', assetBody(user, collection, `cached-${Date.now()}`));
  assert.equal(created.status, 201, created.raw);
  const uid = created.body.data.uid as string;

  const first = await reader.get(`/asset/${uid}`);
  assert.equal(first.status, 200, first.raw);

  // The workers mint it: the moment the (uncached) list says so, the cached read says so too.
  let minted = false;
  while (!minted) {
    const list = await writer.get(`/asset?user_uid=${user}`);
    minted = (list.body.data as { uid: string; is_minted: boolean }[]).some((a) => a.uid === uid && a.is_minted);
    const read = (await reader.get(`/asset/${uid}`)).body.data;
    if (minted) assert.equal(read.is_minted, true, 'a cached read after the mint was committed shows it minted');
    else await new Promise((r) => setTimeout(r, 20));
  }
  // Minted, the asset stays as it is until the edit below (before, the workers change it at any
  // moment: its wallet address, its mint), so two reads in a row now must be one answer.
  const settled = await reader.get(`/asset/${uid}`);
  const before = await hits(readerBase);
  const cached = await reader.get(`/asset/${uid}`);
  assert.equal(await hits(readerBase), before + 1, 'the second read is answered from memory');
  assert.equal(cached.raw, settled.raw);
  assert.equal(cached.headers.get('content-type'), 'application/json; charset=utf-8');

  // Cached, then an edit through the writer: its answer is out before the next read.
  const edit = await writer.call('PUT', `/asset/${uid}`, editBody);
  assert.equal(edit.status, 200, edit.raw);
  const afterEdit = (await reader.get(`/asset/${uid}`)).body.data;
  assert.equal(afterEdit.is_editing, true, 'the edit is seen by the next read');
}

describe('cached asset reads (sqlite, npm start)', () => {
  let child: ChildProcess | null = null;
  after(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child!.once('exit', r));
    }
  });

  it('a read after a commit of either thread shows it', async () => {
    const dataDir = tempDir('mintworks-reads-');
    const env = { DATA_DIR: dataDir, PORT: String(await freePort()), ANVIL_PORT: String(await freePort()), LOG_LEVEL: 'warn' };
    child = startService(env, 'service.log');
    const base = `http://127.0.0.1:${env.PORT}`;
    await healthy(base);
    const demo = demoEnv(dataDir);
    const api = new ApiClient(demo.MW_URL, demo.MW_API_KEY, demo.MW_TOKEN);
    await waitFor('demo collection deployed', async () => (await api.get(`/collection/${demo.MW_COLLECTION}`)).body.data.status === 'deployed', 60_000);
    await coherentReads(api, api, base, demo.MW_COLLECTION);
  });
});

describe('cached asset reads (postgres, two processes)', () => {
  const children: ChildProcess[] = [];
  let pgdb: Awaited<ReturnType<typeof freshPostgres>> | null = null;
  let writer: ApiClient;
  let reader: ApiClient;
  let secondBase = '';
  let collection = '';
  before(async () => {
    pgdb = await freshPostgres();
    const dataDir = tempDir('mintworks-reads-pg-');
    const common = {
      DATABASE_URL: pgdb.url,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      MASTER_KEY: 'cd'.repeat(32),
      OPERATOR_TOKEN: 'operator-token-for-the-reads-test-0123456789',
    };
    const first = { ...common, PORT: String(await freePort()), ANVIL_PORT: String(await freePort()) };
    children.push(startService(first, 'first.log'));
    await healthy(`http://127.0.0.1:${first.PORT}`);
    const second = { ...common, PORT: String(await freePort()), WORKERS: 'false', DEMO_APP: 'false', CHAIN_RPC_URL: `http://127.0.0.1:${first.ANVIL_PORT}` };
    children.push(startService(second, 'second.log'));
    secondBase = `http://127.0.0.1:${second.PORT}`;
    await healthy(secondBase);
    const demo = demoEnv(dataDir);
    writer = new ApiClient(demo.MW_URL, demo.MW_API_KEY, demo.MW_TOKEN);
    reader = new ApiClient(`${secondBase}/v1`, demo.MW_API_KEY, demo.MW_TOKEN);
    collection = demo.MW_COLLECTION;
    await waitFor('demo collection deployed', async () => (await writer.get(`/collection/${collection}`)).body.data.status === 'deployed', 60_000);
  });
  after(async () => {
    await stopAll(children);
    await pgdb?.drop();
  });

  it('a read in one process after a commit of the other shows it', async () => {
    await coherentReads(writer, reader, secondBase, collection);
  });

  it('an update of hundreds of assets in one statement, even by hand in SQL, reaches every cached read', async () => {
    // More rows than one notification carries (500): the trigger sends them in parts.
    const user = (await writer.post('/user', {})).body.data.uid as string;
    const uids: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < 600) {
          const r = await writer.post('/asset', assetBody(user, collection, `many-${next++}`));
          assert.equal(r.status, 201, r.raw);
          uids.push(r.body.data.uid);
        }
      }),
    );
    // Every one minted first: a mint changes the row, so a read racing the mint loop would miss the
    // cache for a good reason and say nothing about it. These reads fill the cache too.
    for (const uid of uids) {
      await waitFor(`asset ${uid} minted`, async () => (await reader.get(`/asset/${uid}`)).body.data.is_minted === true, 120_000, 50);
    }
    // A row may still change once after it reads minted (the mint's last bookkeeping), which a cache
    // must show as a miss: measured after a fresh fill, up to three times. A cache that does not
    // answer from memory fails every time.
    let cached = false;
    for (let attempt = 0; attempt < 3 && !cached; attempt++) {
      for (const uid of uids.slice(0, 10)) await reader.get(`/asset/${uid}`);
      const before = await hits(secondBase);
      for (const uid of uids.slice(0, 10)) assert.equal((await reader.get(`/asset/${uid}`)).status, 200);
      cached = (await hits(secondBase)) === before + 10;
    }
    assert.ok(cached, 'ten reads in a row answered from memory');
    const sqlClient = new pg.Client({ connectionString: pgdb!.url });
    await sqlClient.connect();
    try {
      const r = await sqlClient.query(`update assets set name = 'Renamed by hand' where mint_for_user_uid = $1`, [user]);
      assert.equal(r.rowCount, 600);
    } finally {
      await sqlClient.end();
    }
    const names = await Promise.all(uids.map(async (uid) => (await reader.get(`/asset/${uid}`)).body.data.name as string));
    assert.deepEqual([...new Set(names)], ['Renamed by hand']);
  });
});
