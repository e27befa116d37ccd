// PostgreSQL going away under load: `npm start` (API, creates' thread, workers' thread, embedded chain)
// on a private cluster of the test's own, during a burst of 2,000 creates. The cluster takes an
// immediate stop and a restart 3 s later (what a crash or a failover does), then every backend is
// terminated three times (what a restart, a pooler or idle_in_transaction_session_timeout does). The
// service never exits, never answers 500 (a request the database fails is a 503 with Retry-After, which
// the clients here retry with the same Idempotency-Key), its threads are never restarted, every asset
// answered 201 is minted exactly once, and the webhook dispatcher delivers every mint's event after it.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createPublicClient, http, parseAbi, type Address } from 'viem';
import { ApiClient, demoEnv, freePort, tempDir, waitFor, waitForProgress } from '../helpers/env.js';
import { privateCluster, type PrivateCluster } from '../helpers/private-pg.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const erc721 = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)']);
const ASSETS = 2000;
const OUTAGE_MS = 3000;

describe('PostgreSQL stopped, restarted and its backends terminated during a burst', () => {
  let cluster: PrivateCluster | null = null;
  let service: ChildProcess | null = null;
  let dataDir = '';
  let receiver: Server | null = null;
  after(async () => {
    receiver?.close();
    if (service && service.exitCode === null && service.signalCode === null) {
      const exited = new Promise((r) => service!.once('exit', r));
      service.kill('SIGTERM');
      await exited;
    }
    cluster?.destroy();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('never exits, never answers 500, and mints every accepted asset exactly once', { timeout: 1_200_000 }, async () => {
    cluster = await privateCluster();
    cluster.start();
    const pgCluster = cluster;
    dataDir = tempDir('mintworks-failover-');
    const port = await freePort();
    const env = {
      DATABASE_URL: cluster.url,
      DATA_DIR: dataDir,
      PORT: String(port),
      ANVIL_PORT: String(await freePort()),
      LOG_LEVEL: 'warn',
      MASTER_KEY: 'cd'.repeat(32),
      OPERATOR_TOKEN: 'operator-token-for-the-failover-test-012345',
      OUTBOUND_ALLOW_PRIVATE: 'true',
      // Unniced: beside another load (four test files and two busy loops), niced minting got no CPU
      // for a minute; what this test looks at is the database going away, not the priority.
      WORKER_NICE: '0',
    };
    // A webhook receiver: the dispatcher must go on delivering after the outage, each mint's event at least once.
    const minted = new Set<string>();
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const ev = JSON.parse(body) as { event: string; data: { asset?: { uid: string } } };
        if (ev.event === 'asset.minted' && ev.data.asset) minted.add(ev.data.asset.uid);
        res.end('ok');
      });
    });
    await new Promise<void>((r) => receiver!.listen(0, '127.0.0.1', r));
    const logFile = path.join(dataDir, 'service.log');
    const out = fs.openSync(logFile, 'a');
    const proc = spawn(process.execPath, [path.join(root, 'dist/main.js')], { env: { ...process.env, ...env }, stdio: ['ignore', out, out] });
    service = proc;
    let exit: string | null = null;
    proc.once('exit', (code, signal) => (exit = `exit code ${code} signal ${signal}`));
    const alive = () => assert.equal(exit, null, `the service exited (${exit}):\n${fs.readFileSync(logFile, 'utf8').slice(-4000)}`);

    const base = `http://127.0.0.1:${port}`;
    await waitFor('service health', async () => (await fetch(`${base}/health`).catch(() => null))?.status === 200, 90_000, 100);
    const demo = demoEnv(dataDir);
    const client = new ApiClient(demo.MW_URL, demo.MW_API_KEY, demo.MW_TOKEN);
    await waitFor('demo collection deployed', async () => (await client.get(`/collection/${demo.MW_COLLECTION}`)).body.data.status === 'deployed', 60_000);
    const users = await Promise.all(Array.from({ length: 10 }, () => client.post('/user', {}).then((r) => r.body.data.uid as string)));
    const hook = await fetch(`${base}/admin/v1/apps/${demo.MW_APP}/webhook`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${env.OPERATOR_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, events: ['asset.minted'] }),
    });
    assert.equal(hook.status, 201, await hook.text());

    // The burst: each create is sent until it is answered 201; a 503 must say when to retry.
    const statuses = new Map<number, number>();
    const unexpected: string[] = [];
    const accepted = new Map<number, string>();
    let next = 0;
    const burst = Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < ASSETS) {
          const i = next++;
          for (;;) {
            const r = await client
              .call(
                'POST',
                '/asset',
                {
                  user_uid: users[i % 10],
                  collection_uid: demo.MW_COLLECTION,
                  asset_external_id: `failover-${i}`,
                  data: { name: 'Failover', unique_name: false, image_url: 'https://example.com/f.png', store_image_on_ipfs: false },
                },
                { 'Idempotency-Key': `failover-${i}` },
              )
              .catch((err) => {
                alive(); // a refused connection: say so if the service is gone
                throw err;
              });
            statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
            if (r.status === 201) {
              accepted.set(i, r.body.data.uid);
              break;
            }
            if (r.status === 503 && r.body?.error?.detail?.code === 'database_unavailable' && Number(r.headers.get('retry-after')) > 0) {
              await new Promise((res) => setTimeout(res, 100));
              continue;
            }
            unexpected.push(`${r.status} ${r.headers.get('retry-after') ?? ''} ${r.raw.slice(0, 300)}`);
            if (unexpected.length > 20) throw new Error(`unexpected answers:\n${unexpected.join('\n')}`);
            await new Promise((res) => setTimeout(res, 100));
          }
        }
      }),
    );

    const terminated: number[] = [];
    const faults = (async () => {
      const atAccepted = (n: number) => waitFor(`${n} assets accepted`, async () => accepted.size >= n, 180_000, 10);
      await atAccepted(300);
      pgCluster.stopImmediately();
      await new Promise((r) => setTimeout(r, OUTAGE_MS)); // the outage itself
      alive();
      pgCluster.start();
      const afterRestart = accepted.size;
      for (const n of [300, 600, 900]) {
        await atAccepted(afterRestart + n);
        const admin = new pg.Client({ connectionString: pgCluster.url });
        await admin.connect();
        const { rows } = await admin.query(
          `select count(*)::int as n from (select pg_terminate_backend(pid) from pg_stat_activity where pid <> pg_backend_pid() and backend_type = 'client backend') t`,
        );
        await admin.end();
        terminated.push(rows[0].n);
        alive();
      }
    })();
    await Promise.all([burst, faults]);
    alive();
    process.stdout.write(`# answers: ${JSON.stringify(Object.fromEntries(statuses))}; backends terminated: ${terminated.join(', ')}\n`);
    assert.deepEqual(unexpected, []);
    assert.equal(statuses.get(500) ?? 0, 0, 'no answer is a 500');
    assert.equal(accepted.size, ASSETS);
    assert.ok(
      terminated.every((n) => n > 0),
      'each termination found backends to end',
    );

    const countMinted = async () => {
      const lists = await Promise.all(
        users.map((u) => client.get(`/asset?user_uid=${u}`).then((r) => (r.status === 200 ? (r.body.data as { is_minted: boolean }[]) : []))),
      );
      return lists.flat().filter((a) => a.is_minted).length;
    };
    // Beside another load minting is slow but moves; a stall of a minute is a hang.
    await waitForProgress(`all ${ASSETS} minted`, countMinted, ASSETS, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${fs.readFileSync(logFile, 'utf8').slice(-4000)}`);
    });
    // Deliveries cut by the outage come back on the retry schedule (5 s, 15 s, 30 s, 1 min, 2 min…) or
    // when their claim lapses: on a busy machine more of them fall into the outage, so more wait (the
    // schedule's gap of 2 min, then some).
    await waitForProgress(`an asset.minted delivery for each of the ${ASSETS}`, async () => minted.size, ASSETS, 180_000, 200);
    alive();

    const health = (await client.call('GET', '/health')).body;
    // The threads rode it out: none was restarted.
    assert.equal(health.creates_thread?.restarts ?? 0, 0, JSON.stringify(health));
    assert.equal(health.worker_thread?.restarts ?? 0, 0, JSON.stringify(health));

    const coll = (await client.get(`/collection/${demo.MW_COLLECTION}`)).body.data;
    const rpc = createPublicClient({ transport: http(`http://127.0.0.1:${env.ANVIL_PORT}`) });
    const logs = await rpc.getContractEvents({ address: coll.contract_address as Address, abi: erc721, eventName: 'Transfer', fromBlock: 0n });
    const mints = new Map<bigint, number>();
    for (const l of logs) if (BigInt(l.args.from!) === 0n) mints.set(l.args.tokenId!, (mints.get(l.args.tokenId!) ?? 0) + 1);
    for (const [id, n] of mints) assert.equal(n, 1, `token ${id} minted once`);
    assert.equal(mints.size, ASSETS);
    const uids = [...accepted.values()];
    assert.equal(new Set(uids).size, ASSETS, 'an asset per create');
    for (let i = 0; i < uids.length; i += 100) {
      for (const a of await Promise.all(uids.slice(i, i + 100).map((u) => client.get(`/asset/${u}`).then((r) => r.body.data)))) {
        assert.equal(mints.get(BigInt(a.token_id)), 1, `asset ${a.uid}: token ${a.token_id} on chain once`);
      }
    }
    const logText = fs.readFileSync(logFile, 'utf8');
    assert.doesNotMatch(logText, /stopped unexpectedly|Unhandled 'error' event/, 'no thread died');
  });
});
