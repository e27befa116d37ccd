// The load of a managed-PostgreSQL installation's acceptance: one API process (with the chain) and one
// worker process on a database reached as `env` says (through a pooler or not); 1,000 creates at 32
// connections, 300 user lists and asset reads during them, then 100 edits once minted. Every answer is
// checked (never a 5xx), both logs are read for error lines, and every asset is counted on chain once.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { createPublicClient, http, parseAbi, zeroAddress, type Address } from 'viem';
import { startService, stopAll } from './process-group.js';
import { ApiClient, demoEnv, freePort, tempDir, waitFor } from './env.js';

const erc721 = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)']);

export interface LoadResult {
  /** POST /asset answered → asset.minted recorded, median and 90th percentile (ms). */
  p50: number;
  p90: number;
  seconds: number;
  statuses: Record<string, number>;
}

export interface LoadOptions {
  /** The processes' database settings (DATABASE_URL, DATABASE_POOL_MODE, DATABASE_DIRECT_URL…). */
  env: Record<string, string>;
  /** A direct connection for the test's own reads (counting mints). */
  directUrl: string;
  creates?: number;
  lists?: number;
  edits?: number;
  label: string;
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

/** Lines of a JSON log at level error or fatal (pino: 50, 60). */
export function errorLines(file: string): string[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => /"level":(50|60)\b/.test(l) || /^(Error|TypeError|node:)/.test(l));
}

export async function runManagedLoad(o: LoadOptions): Promise<LoadResult> {
  const creates = o.creates ?? 1000;
  const listCount = o.lists ?? 300;
  const editCount = o.edits ?? 100;
  const children: ChildProcess[] = [];
  const dataDir = tempDir('mintworks-managed-');
  const statuses: Record<string, number> = {};
  const seen = (what: string, status: number, raw: string) => {
    statuses[`${what} ${status}`] = (statuses[`${what} ${status}`] ?? 0) + 1;
    assert.ok(status < 500, `${o.label}: ${what} answered ${status}: ${raw}`);
  };
  const db = new pg.Client({ connectionString: o.directUrl });
  try {
    const common = {
      ...o.env,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      MASTER_KEY: 'cd'.repeat(32),
      OPERATOR_TOKEN: 'operator-token-of-the-managed-test-0123',
    };
    const apiEnv = { ...common, PORT: String(await freePort()), ANVIL_PORT: String(await freePort()), WORKERS: 'false' };
    children.push(startService(apiEnv, 'api.log'));
    const base = `http://127.0.0.1:${apiEnv.PORT}`;
    await waitFor('API answering', async () => (await fetch(`${base}/health`).catch(() => null)) !== null, 90_000, 100);
    const workerEnv = { ...common, PORT: '0', API: 'false', DEMO_APP: 'false', CHAIN_RPC_URL: `http://127.0.0.1:${apiEnv.ANVIL_PORT}` };
    children.push(startService(workerEnv, 'worker.log'));
    await waitFor('API ready', async () => (await fetch(`${base}/health`)).status === 200, 90_000, 100);
    const demo = demoEnv(dataDir);
    const client = new ApiClient(demo.MW_URL, demo.MW_API_KEY, demo.MW_TOKEN);
    await waitFor('demo collection deployed', async () => (await client.get(`/collection/${demo.MW_COLLECTION}`)).body.data.status === 'deployed', 90_000);
    const users: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await client.post('/user', {});
      seen('POST /user', r.status, r.raw);
      users.push(r.body.data.uid);
    }

    const t0 = Date.now();
    const answeredAt = new Map<string, number>();
    let next = 0;
    const burst = Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < creates) {
          const i = next++;
          const r = await client.call(
            'POST',
            '/asset',
            {
              user_uid: users[i % users.length],
              collection_uid: demo.MW_COLLECTION,
              asset_external_id: `managed-${i}`,
              data: { name: `Item ${i}`, unique_name: false, image_url: 'https://example.com/i.png', store_image_on_ipfs: false },
            },
            { 'Idempotency-Key': randomUUID() },
          );
          seen('POST /asset', r.status, r.raw);
          assert.equal(r.status, 201, r.raw);
          answeredAt.set(r.body.data.uid, Date.now());
        }
      }),
    );
    // Lists and reads while the burst runs, as Apps poll.
    let lists = 0;
    const reads = Promise.all(
      Array.from({ length: 4 }, async (_, lane) => {
        while (lists < listCount) {
          lists++;
          const r = await client.get(`/asset?user_uid=${users[(lists + lane) % users.length]}`);
          seen('GET /asset?user_uid', r.status, r.raw);
          const some = [...answeredAt.keys()].at(-1 - lane);
          if (some) {
            const one = await client.get(`/asset/${some}`);
            seen('GET /asset/<uid>', one.status, one.raw);
          }
        }
      }),
    );
    await Promise.all([burst, reads]);
    // The pool, as an operator watches it: /health and /metrics of the API process.
    const health = (await (await fetch(`${base}/health`)).json()) as { database_pool?: { max: number; open: number; waits: number } };
    assert.equal(health.database_pool?.max, 10, JSON.stringify(health.database_pool));
    assert.ok(health.database_pool.open >= 1);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    for (const name of [
      'mintworks_db_pool_connections{state="open"}',
      'mintworks_db_pool_waiting',
      'mintworks_db_pool_waits_total',
      'mintworks_db_pool_wait_seconds_total',
    ])
      assert.ok(metrics.includes(`\n${name} `), `/metrics has ${name}`);

    await db.connect();
    const minted = async () =>
      Number(
        (await db.query<{ n: string }>("select count(*) as n from assets where collection_uid = $1 and mint_status = 'minted'", [demo.MW_COLLECTION])).rows[0]
          .n,
      );
    await waitFor(`${o.label}: all ${creates} minted`, async () => (await minted()) === creates, 180_000, 250);
    const seconds = (Date.now() - t0) / 1000;
    const mintedAt = new Map(
      (
        await db.query<{ uid: string; t: string }>("select payload::json->'asset'->>'uid' as uid, created_at_ms as t from events where type = 'asset.minted'")
      ).rows.map((r) => [r.uid, Number(r.t)]),
    );
    const lags = [...answeredAt].map(([uid, at]) => mintedAt.get(uid)! - at);
    assert.equal(lags.filter((l) => Number.isFinite(l)).length, creates, 'an asset.minted event per asset');

    // Edits of minted assets, through the same API process.
    const toEdit = [...answeredAt.keys()].slice(0, editCount);
    await Promise.all(
      toEdit.map(async (uid, i) => {
        const r = await client.call('PUT', `/asset/${uid}`, { data: { name: `Edited ${i}`, unique_name: false, image_url: 'https://example.com/e.png' } });
        seen('PUT /asset/<uid>', r.status, r.raw);
        assert.equal(r.status, 200, r.raw);
      }),
    );
    await waitFor(
      `${o.label}: the ${editCount} edits applied`,
      async () =>
        Number((await db.query<{ n: string }>('select count(*) as n from assets where uid = any($1) and is_editing = 0', [toEdit])).rows[0].n) === editCount,
      120_000,
      250,
    );

    // Exactly once on chain: one Transfer from 0x0 per token id, as many as assets.
    const coll = (await client.get(`/collection/${demo.MW_COLLECTION}`)).body.data as { contract_address: Address };
    const rpc = createPublicClient({ transport: http(`http://127.0.0.1:${apiEnv.ANVIL_PORT}`) });
    const logs = await rpc.getContractEvents({
      address: coll.contract_address,
      abi: erc721,
      eventName: 'Transfer',
      args: { from: zeroAddress },
      fromBlock: 0n,
    });
    const ids = logs.map((l) => String((l.args as { tokenId: bigint }).tokenId));
    assert.equal(ids.length, creates, `${o.label}: one mint per asset`);
    assert.equal(new Set(ids).size, creates, `${o.label}: no token id minted twice`);

    await stopAll(children);
    const result = { p50: percentile(lags, 50), p90: percentile(lags, 90), seconds, statuses };
    process.stdout.write(`# ${o.label}: POST → minted p50 ${result.p50} ms, p90 ${result.p90} ms; all minted ${seconds.toFixed(1)} s after the burst began\n`);
    process.stdout.write(`# ${o.label}: ${JSON.stringify(statuses)}\n`);
    for (const log of ['api.log', 'worker.log']) {
      const lines = errorLines(path.join(dataDir, log));
      // A chain transaction named by an error line: its neighbours as recorded, to tell what happened.
      const tx = lines.map((l) => /"tx":(\d+)/.exec(l)?.[1]).find(Boolean);
      const around = tx
        ? (
            await db.query(
              'select t.id, t.kind, t.nonce, t.status, t.hash, t.prior_hashes, t.created_at, t.updated_at, t.error from chain_txs t, chain_txs x where x.id = $1 and t.from_address = x.from_address and t.nonce between x.nonce - 2 and x.nonce + 2 order by t.nonce, t.id',
              [tx],
            )
          ).rows
        : [];
      assert.deepEqual(lines.slice(0, 5), [], `${o.label}: error lines in ${log} (${dataDir}); ${JSON.stringify(around)}`);
    }
    fs.rmSync(dataDir, { recursive: true, force: true }); // kept when a check failed: its logs
    return result;
  } finally {
    await stopAll(children);
    await db.end().catch(() => {});
  }
}
