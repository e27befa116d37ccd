// test:exclusive — measures timing; run with the machine to itself (scripts/run-integration.mjs).
// Scale-out on PostgreSQL, exactly once: one API process (with the embedded chain, no workers) and two
// worker processes (API=false) on one database; 2,000 assets accepted; one worker process killed -9
// while it mints. The other takes over its leases: every asset is minted, each token id exactly once.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { createPublicClient, http, parseAbi, type Address } from 'viem';
import { startService, stopAll } from '../helpers/process-group.js';
import { ApiClient, demoEnv, freePort, freshPostgres, tempDir, waitFor } from '../helpers/env.js';

const erc721 = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)']);
const ASSETS = 2000;

describe('two worker processes, one killed -9 (postgres)', () => {
  const children: ChildProcess[] = [];
  let pgdb: Awaited<ReturnType<typeof freshPostgres>> | null = null;
  after(async () => {
    await stopAll(children);
    await pgdb?.drop();
  });

  it('every accepted asset is minted exactly once', async () => {
    pgdb = await freshPostgres();
    const dataDir = tempDir('mintworks-workers-');
    const common = {
      DATABASE_URL: pgdb.url,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      MASTER_KEY: 'ab'.repeat(32),
      OPERATOR_TOKEN: 'operator-token-for-the-kill-test-0123456789',
    };
    const apiEnv = { ...common, PORT: String(await freePort()), ANVIL_PORT: String(await freePort()), WORKERS: 'false' };
    const api = startService(apiEnv, 'api.log');
    children.push(api);
    const base = `http://127.0.0.1:${apiEnv.PORT}`;
    // The API process answers at once; it is ready (200) once a worker has deployed the forwarder.
    await waitFor('API health', async () => (await fetch(`${base}/health`).catch(() => null)) !== null, 60_000, 100);
    const workerEnv = { ...common, PORT: '0', API: 'false', DEMO_APP: 'false', CHAIN_RPC_URL: `http://127.0.0.1:${apiEnv.ANVIL_PORT}` };
    const w1 = startService(workerEnv, 'worker1.log');
    const w2 = startService(workerEnv, 'worker2.log');
    children.push(w1, w2);
    await waitFor('API ready', async () => (await fetch(`${base}/health`)).status === 200, 60_000, 100);

    const demo = demoEnv(dataDir);
    const client = new ApiClient(demo.MW_URL, demo.MW_API_KEY, demo.MW_TOKEN);
    await waitFor('demo collection deployed', async () => (await client.get(`/collection/${demo.MW_COLLECTION}`)).body.data.status === 'deployed', 60_000);
    const users = await Promise.all(Array.from({ length: 10 }, () => client.post('/user', {}).then((r) => r.body.data.uid as string)));

    const countMinted = async () => {
      const lists = await Promise.all(users.map((u) => client.get(`/asset?user_uid=${u}`).then((r) => r.body.data as { is_minted: boolean }[])));
      return lists.flat().filter((a) => a.is_minted).length;
    };
    // Midway: as soon as the first mints land (the workers are busy), the first worker dies without a word.
    let mintedAtKill = -1;
    let acceptedAtKill = -1;
    const killer = waitFor('first mints', async () => (await countMinted()) > 0, 120_000, 20).then(async () => {
      w1.kill('SIGKILL');
      acceptedAtKill = accepted.length;
      mintedAtKill = await countMinted();
    });
    const accepted: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < ASSETS) {
          const i = next++;
          const r = await client.post('/asset', {
            user_uid: users[i % 10],
            collection_uid: demo.MW_COLLECTION,
            asset_external_id: `kill-${i}`,
            data: { name: 'Kill', unique_name: false, image_url: 'https://example.com/k.png', store_image_on_ipfs: false },
          });
          assert.equal(r.status, 201, r.raw);
          accepted.push(r.body.data.uid);
        }
      }),
    );
    await killer;

    await waitFor(`all ${ASSETS} minted by the surviving worker`, async () => (await countMinted()) === ASSETS, 240_000, 500);
    process.stdout.write(`# worker 1 killed with ${acceptedAtKill} assets accepted and ${mintedAtKill} minted; all ${ASSETS} minted after\n`);
    const coll = (await client.get(`/collection/${demo.MW_COLLECTION}`)).body.data;
    const rpc = createPublicClient({ transport: http(`http://127.0.0.1:${apiEnv.ANVIL_PORT}`) });
    const logs = await rpc.getContractEvents({ address: coll.contract_address as Address, abi: erc721, eventName: 'Transfer', fromBlock: 0n });
    const mints = new Map<bigint, number>();
    for (const l of logs) if (BigInt(l.args.from!) === 0n) mints.set(l.args.tokenId!, (mints.get(l.args.tokenId!) ?? 0) + 1);
    for (const [id, n] of mints) assert.equal(n, 1, `token ${id} minted once`);
    assert.equal(mints.size, ASSETS);
    const tokenIds = new Set<number>();
    for (let i = 0; i < accepted.length; i += 100) {
      for (const a of await Promise.all(accepted.slice(i, i + 100).map((u) => client.get(`/asset/${u}`).then((r) => r.body.data)))) {
        assert.equal(mints.get(BigInt(a.token_id)), 1, `asset ${a.uid}: token ${a.token_id} on chain once`);
        tokenIds.add(a.token_id);
      }
    }
    assert.equal(tokenIds.size, ASSETS, 'a token id per asset');
  });
});
