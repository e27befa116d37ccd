// test:exclusive — three service processes and a chain under a burst; run with the machine to itself (scripts/run-integration.mjs).
// Relayer rotation across processes (PostgreSQL): one API process (with the embedded chain, no
// workers) and two worker processes (API=false) on one database, as docs/production.md deploys them.
// `mintworks keys rotate-relayers` runs as a process of its own during a burst of creates through the
// API. Each process learns of the new set from the database alone: every create answered 201, every
// asset minted exactly once on chain, nothing recorded from an old relayer after the switch (whichever
// process recorded it), and on chain the new relayers are operators and the old ones are not.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createPublicClient, http, parseAbi, type Address, type PublicClient } from 'viem';
import { startService, stopAll } from '../helpers/process-group.js';
import { demoEnv, ApiClient, freePort, freshPostgres, tempDir, waitFor } from '../helpers/env.js';
import { operatorsOnChain } from '../helpers/rotation.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const erc721 = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)']);
const BURST = 600;

describe('relayer rotation across an API process and two worker processes (postgres)', () => {
  const children: ChildProcess[] = [];
  let pgdb: Awaited<ReturnType<typeof freshPostgres>> | null = null;
  let db: pg.Client | null = null;
  after(async () => {
    await db?.end();
    await stopAll(children);
    await pgdb?.drop();
  });

  it('every process follows the new set: nothing fails, nothing is minted twice, the old relayers send nothing after the switch', async () => {
    pgdb = await freshPostgres();
    const dataDir = tempDir('mintworks-rotation-procs-');
    const common = {
      DATABASE_URL: pgdb.url,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      MASTER_KEY: 'ef'.repeat(32),
      OPERATOR_TOKEN: 'operator-token-for-the-rotation-test-0123456789',
      RELAYER_COUNT: '2',
    };
    const apiEnv = { ...common, PORT: String(await freePort()), ANVIL_PORT: String(await freePort()), WORKERS: 'false' };
    children.push(startService(apiEnv, 'api.log'));
    const base = `http://127.0.0.1:${apiEnv.PORT}`;
    await waitFor('API health', async () => (await fetch(`${base}/health`).catch(() => null)) !== null, 60_000, 100);
    const rpcUrl = `http://127.0.0.1:${apiEnv.ANVIL_PORT}`;
    const workerEnv = { ...common, PORT: '0', API: 'false', DEMO_APP: 'false', CHAIN_RPC_URL: rpcUrl };
    children.push(startService(workerEnv, 'worker1.log'), startService(workerEnv, 'worker2.log'));
    await waitFor('API ready', async () => (await fetch(`${base}/health`)).status === 200, 60_000, 100);
    const demo = demoEnv(dataDir);
    const api = new ApiClient(demo.MW_URL, demo.MW_API_KEY, demo.MW_TOKEN);
    await waitFor('demo collection deployed', async () => (await api.get(`/collection/${demo.MW_COLLECTION}`)).body.data.status === 'deployed', 60_000);
    const users = await Promise.all(Array.from({ length: 8 }, () => api.post('/user', {}).then((r) => r.body.data.uid as string)));

    // The burst, and the rotation started by the CLI in its midst (the chain is the API process's
    // anvil, reached by URL: the deployer funds the new relayers by recorded transfers).
    const statuses: number[] = [];
    const uids: string[] = [];
    let sent = 0;
    const creator = async () => {
      while (sent < BURST) {
        const n = sent++;
        const r = await api.post('/asset', {
          user_uid: users[n % users.length],
          collection_uid: demo.MW_COLLECTION,
          asset_external_id: `procs-${n}`,
          data: { name: 'Shield', unique_name: false, image_url: 'https://example.com/s.png', store_image_on_ipfs: false },
        });
        statuses.push(r.status);
        if (r.status === 201) uids.push(r.body.data.uid);
        // Spread over the rotation's steps (it takes about 15 s), not all accepted before it starts.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const burst = Promise.all(Array.from({ length: 4 }, creator));
    await waitFor('the burst under way', async () => sent >= 50, 30_000, 20);
    const cliEnv = { ...process.env, ...common, CHAIN_RPC_URL: rpcUrl };
    const started = spawnSync(
      process.execPath,
      [path.join(root, 'bin/mintworks.js'), 'keys', 'rotate-relayers', '--chain', '31337', '--fund', '10', '--json'],
      {
        env: cliEnv,
        encoding: 'utf8',
        timeout: 240_000,
      },
    );
    assert.equal(started.status, 0, `${started.stderr}\n${started.stdout}`);
    const rotation = JSON.parse(started.stdout) as { id: number; phase: string; new_relayers: string[]; old_relayers: string[] };
    assert.equal(rotation.phase, 'done', started.stdout);
    await burst;
    assert.deepEqual(
      statuses.filter((s) => s !== 201),
      [],
      'every create answered 201',
    );
    assert.ok(sent >= BURST);

    db = new pg.Client({ connectionString: pgdb.url });
    await db.connect();
    const row = (await db.query('select switched_at, finished_at from relayer_rotations where id = $1', [rotation.id])).rows[0];
    assert.ok(row.finished_at, 'the rotation finished');
    await waitFor(
      'every asset minted',
      async () => Number((await db!.query("select count(*) as n from assets where uid = any($1) and mint_status = 'minted'", [uids])).rows[0].n) === BURST,
      120_000,
      250,
    );
    // Mints recorded after the switch, and by whom: only the new relayers (and the deployer's own work).
    const deployer = (await db.query('select address from relayers where chain_id = 31337 and idx = -1 order by address')).rows.map((r) => r.address);
    const after = (await db.query('select from_address, kind from chain_txs where chain_id = 31337 and created_at > $1', [Number(row.switched_at)])).rows as {
      from_address: string;
      kind: string;
    }[];
    assert.ok(
      after.some((t) => t.kind === 'asset.mint'),
      'mints were recorded after the switch',
    );
    assert.deepEqual(
      after.filter((t) => !rotation.new_relayers.includes(t.from_address) && !deployer.includes(t.from_address)),
      [],
      'nothing recorded from an old relayer after the switch',
    );
    const states = (await db.query('select address, state from relayers where chain_id = 31337 and idx >= 0')).rows as { address: string; state: string }[];
    for (const a of rotation.old_relayers) assert.equal(states.find((s) => s.address === a)?.state, 'retired');
    for (const a of rotation.new_relayers) assert.equal(states.find((s) => s.address === a)?.state, 'active');

    const rpc = createPublicClient({ transport: http(rpcUrl) }) as PublicClient;
    const contract = (await db.query('select contract_address from collections where uid = $1', [demo.MW_COLLECTION])).rows[0].contract_address as Address;
    const mints = await rpc.getLogs({ address: contract, event: erc721[0], args: { from: '0x0000000000000000000000000000000000000000' }, fromBlock: 0n });
    const ours = new Set((await db.query('select token_id from assets where uid = any($1)', [uids])).rows.map((r) => BigInt(r.token_id)));
    const minted = mints.filter((l) => ours.has(l.args.tokenId!));
    assert.equal(minted.length, BURST, 'one mint on chain per asset');
    assert.equal(new Set(minted.map((l) => l.args.tokenId)).size, BURST, 'no token minted twice');
    for (const c of await operatorsOnChain(rpc, [contract], rotation.new_relayers, rotation.old_relayers)) {
      assert.deepEqual(c.fresh, [true, true]);
      assert.deepEqual(c.old, [false, false]);
    }
  });
});
