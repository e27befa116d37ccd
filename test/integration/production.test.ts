// docs/production.md, run as written: its `walkthrough` blocks, extracted from the document and run with
// bash in order, against the local PostgreSQL (a database and role of their own) and a chain started as
// the document starts it (2 s blocks): two API and two worker processes. Then 1,000 assets over both API
// ports while one worker is killed -9 and the API processes are restarted one by one (the document's
// rolling restart); every asset is minted exactly once, its tokenURI on chain is the token_uri the API
// answers, and that URL answers 200. The document's backup, monitoring and teardown blocks run last, and
// nothing is left running.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { createPublicClient, http, parseAbi, zeroAddress, type Address } from 'viem';
import { freePort, PG_BASE, SHARED_PG_POOL_SIZE, tempDir, waitFor } from '../helpers/env.js';
import { alive, runWalkthroughBlock, walkthroughBlocks, withProcessLogs } from '../helpers/walkthrough.js';

const ASSETS = 1000;
const erc721 = parseAbi([
  'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
  'function tokenURI(uint256 id) view returns (string)',
]);

const readEnvFile = (file: string) =>
  Object.fromEntries(
    fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );

describe('docs/production.md, run as written', () => {
  const blocks = walkthroughBlocks();
  let env: Record<string, string> = {};
  let home = '';
  const seenPids = new Set<number>();
  const pidsOf = () => {
    for (const f of fs.existsSync(path.join(home, 'run')) ? fs.readdirSync(path.join(home, 'run')) : []) {
      const pid = Number(fs.readFileSync(path.join(home, 'run', f), 'utf8'));
      if (pid > 0) seenPids.add(pid);
    }
    const anvil = path.join(home, 'chain', 'anvil.pid');
    if (fs.existsSync(anvil)) seenPids.add((JSON.parse(fs.readFileSync(anvil, 'utf8')) as { pid: number }).pid);
  };
  const run = (name: string) => {
    const code = blocks.get(name);
    assert.ok(code, `docs/production.md has no walkthrough block "${name}"`);
    return runWalkthroughBlock(name, code, env)
      .catch((err) => {
        throw home ? withProcessLogs(home, err) : err;
      })
      .finally(() => home && pidsOf());
  };

  after(async () => {
    // A failed run still takes everything down: the document's teardown, then whatever it missed.
    if (home && fs.existsSync(path.join(home, 'logs'))) {
      // What the processes said, kept for a failed run (the teardown removes MW_HOME).
      const kept = tempDir('mintworks-production-logs-');
      fs.cpSync(path.join(home, 'logs'), kept, { recursive: true });
      process.stdout.write(`# the walkthrough's logs: ${kept}\n`);
    }
    if (home && fs.existsSync(home)) await run('teardown').catch((err) => process.stdout.write(`# teardown: ${(err as Error).message}\n`));
    for (const pid of seenPids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });

  it('runs the walkthrough, mints 1,000 assets exactly once through a kill -9 and a rolling restart, and leaves nothing running', async () => {
    for (const name of [
      'settings',
      'postgres',
      'secrets',
      'env',
      'chain',
      'first-api',
      'fund',
      'processes',
      'first-mint',
      'rolling-restart',
      'backup',
      'monitoring',
      'teardown',
    ]) {
      assert.ok(blocks.has(name), `walkthrough block "${name}" is missing`);
    }
    home = path.join(tempDir('mintworks-production-'), 'home');
    const [api1, api2, chainPort] = [await freePort(), await freePort(), await freePort()];
    env = {
      MW_HOME: home,
      MW_PG_ADMIN: `${PG_BASE}/postgres`,
      MW_PG_HOST: new URL(PG_BASE).host,
      MW_DB: `mw_prod_${process.pid}_${Date.now().toString(36)}`,
      // No reverse proxy here: the public URL is the first API process (the document says so for a laptop).
      MW_PUBLIC_URL: `http://127.0.0.1:${api1}`,
      MW_API_PORTS: `${api1} ${api2}`,
      MW_CHAIN_PORT: String(chainPort),
      DATABASE_POOL_SIZE: SHARED_PG_POOL_SIZE, // the processes inherit it (the walkthrough's files leave it out)
    };
    const t0 = Date.now();
    for (const name of ['settings', 'postgres', 'secrets', 'env', 'chain']) await run(name);
    const firstApi = await run('first-api');
    // Funding is said once, clearly: before the fund block the API process names the deployer to fund.
    assert.match(firstApi, /fund deployer 0x[0-9a-fA-F]{40} on chain 31337/, firstApi);
    assert.match(firstApi, /"ready": false/, firstApi);
    await run('fund');
    const processes = await run('processes');
    assert.match(processes, /"msg":"workers ready","public_url":"http:\/\/127\.0\.0\.1:\d+"/, processes);
    const firstMint = await run('first-mint');
    assert.match(firstMint, /token_uri answers 200/, firstMint);
    process.stdout.write(`# walkthrough up to the first mint: ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);

    // The installation as the document left it.
    const settings = { ...readEnvFile(path.join(home, 'mintworks.env')), ...readEnvFile(path.join(home, 'secrets', 'secrets.env')) };
    const app = JSON.parse(fs.readFileSync(path.join(home, 'secrets', 'app.json'), 'utf8')) as { uid: string; api_key: string };
    const collection = (JSON.parse(fs.readFileSync(path.join(home, 'collection.json'), 'utf8')) as { uid: string }).uid;
    const token = (await runWalkthroughBlock('token', `node bin/mintworks.js token --app ${app.uid}`, settings)).trim();
    const headers = { 'X-API-KEY': app.api_key, Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
    const bases = [`http://127.0.0.1:${api1}/v1`, `http://127.0.0.1:${api2}/v1`];
    // As a load balancer would: a process that refuses the connection (restarting) is skipped for the other.
    const call = async (i: number, method: string, p: string, body?: unknown, extra: Record<string, string> = {}) => {
      for (let attempt = 0; ; attempt++) {
        try {
          const res = await fetch(`${bases[(i + attempt) % 2]}${p}`, {
            method,
            headers: { ...headers, ...extra },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
          const text = await res.text();
          if (res.status === 503 && attempt < 200) continue; // a process that is stopping or not ready yet
          return { status: res.status, body: text ? JSON.parse(text) : undefined, raw: text };
        } catch (err) {
          if (attempt > 200) throw err;
          await new Promise((r) => setTimeout(r, 25));
        }
      }
    };
    const users: string[] = [];
    for (let i = 0; i < 10; i++) users.push((await call(i, 'POST', '/user', {})).body.data.uid);

    const db = new pg.Client({ connectionString: settings.DATABASE_URL });
    await db.connect();
    const minted = async () =>
      Number((await db.query<{ n: string }>("select count(*) as n from assets where collection_uid = $1 and mint_status = 'minted'", [collection])).rows[0].n);
    try {
      const accepted: string[] = [];
      let next = 0;
      const restart: { done: Promise<string> | null } = { done: null };
      const killWorker = waitFor('the first mints of the burst', async () => (await minted()) > 1, 120_000, 50).then(() => {
        const pid = Number(fs.readFileSync(path.join(home, 'run', 'worker1.pid'), 'utf8'));
        process.kill(pid, 'SIGKILL');
        process.stdout.write(`# worker1 (pid ${pid}) killed -9 with ${accepted.length} assets accepted\n`);
        restart.done = run('rolling-restart');
      });
      await Promise.all(
        Array.from({ length: 16 }, async (_, lane) => {
          while (next < ASSETS) {
            const i = next++;
            const r = await call(
              lane,
              'POST',
              '/asset',
              {
                user_uid: users[i % users.length],
                collection_uid: collection,
                asset_external_id: `prod-${i}`,
                data: { name: `Item ${i}`, unique_name: false, image_url: 'https://example.com/i.png', store_image_on_ipfs: false },
              },
              { 'Idempotency-Key': randomUUID() },
            );
            assert.equal(r.status, 201, r.raw);
            accepted.push(r.body.data.uid);
            // Keep the burst going until the rolling restart has begun.
            if (accepted.length === ASSETS - 100 && !restart.done) await killWorker;
          }
        }),
      );
      await killWorker;
      const restartLog = await restart.done!;
      assert.match(restartLog, /api2 on \d+ restarted and ready/, restartLog);
      assert.equal(new Set(accepted).size, ASSETS);

      await waitFor(`all ${ASSETS + 1} assets minted`, async () => (await minted()) === ASSETS + 1, 180_000, 250);
      process.stdout.write(
        `# ${ASSETS} assets accepted and minted through a kill -9 and a rolling restart: ${((Date.now() - t0) / 1000).toFixed(1)} s from the start\n`,
      );

      // Exactly once on chain: one Transfer from 0x0 per token id, as many as assets.
      const coll = (await call(0, 'GET', `/collection/${collection}`)).body.data as { contract_address: Address };
      const rpc = createPublicClient({ transport: http(`http://127.0.0.1:${chainPort}`) });
      const logs = await rpc.getContractEvents({
        address: coll.contract_address,
        abi: erc721,
        eventName: 'Transfer',
        args: { from: zeroAddress },
        fromBlock: 0n,
      });
      const ids = logs.map((l) => (l.args as { tokenId: bigint }).tokenId);
      assert.equal(ids.length, ASSETS + 1, 'one mint per asset');
      assert.equal(new Set(ids.map(String)).size, ASSETS + 1, 'no token id minted twice');

      // tokenURI on chain is the API's token_uri, and it answers.
      let checked = 0;
      const queue = [...accepted];
      await Promise.all(
        Array.from({ length: 16 }, async (_, lane) => {
          for (let uid = queue.pop(); uid; uid = queue.pop()) {
            const a = (await call(lane, 'GET', `/asset/${uid}`)).body.data as { token_id: number; token_uri: string; is_minted: boolean };
            assert.equal(a.is_minted, true);
            const onChain = await rpc.readContract({ address: coll.contract_address, abi: erc721, functionName: 'tokenURI', args: [BigInt(a.token_id)] });
            assert.equal(onChain, a.token_uri);
            const doc = await fetch(a.token_uri);
            assert.equal(doc.status, 200, a.token_uri);
            await doc.arrayBuffer();
            checked++;
          }
        }),
      );
      assert.equal(checked, ASSETS);
    } finally {
      await db.end();
    }

    const backup = await run('backup');
    assert.match(backup, /mintworks\.pgdump/, backup);
    assert.match(backup, /master key is not in this backup \(it comes from MASTER_KEY\)/, backup);
    assert.doesNotMatch(backup, /^\s+master\.key$/m, backup);
    const monitoring = await run('monitoring');
    assert.match(monitoring, /"ready": true/, monitoring);

    pidsOf();
    const pids = [...seenPids];
    await run('teardown');
    assert.deepEqual(pids.filter(alive), [], 'nothing of the walkthrough is left running');
    assert.equal(fs.existsSync(home), false);
    home = '';
    process.stdout.write(`# the whole walkthrough: ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  });
});
