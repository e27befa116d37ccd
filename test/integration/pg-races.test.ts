// six service processes at once, with start-up deadlines; no wall-clock assertion: it shares the machine.
// Processes racing on one PostgreSQL database, directly and through PgBouncer in transaction mode.
// - Four API processes started at once on an empty database, then two worker processes at once: the
//   migrations run once, every first write of an installation (its record, the wallet seed, the relayer
//   set) is there once, no error line, and all four serve.
// - Through the pooler, two of them then get the same Idempotency-Key at once, 100 rounds each: with different bodies one
//   201 and the other 422 idempotency_key_reused (or 409 idempotency_key_in_use); with the same body the
//   same asset twice (one a replay) or a 409; never a 500, never 400 asset_external_id_exists.
// - The first webhook setting of an App sent to both at once, 100 Apps: both answer, one row.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { startService, stopAll } from '../helpers/process-group.js';
import { ApiClient, freePort, freshPostgres, SHARED_PG_POOL_SIZE, tempDir, waitFor } from '../helpers/env.js';
import { startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';
import { startExternalNode, type ExternalNode } from '../helpers/external-node.js';
import { errorLines } from '../helpers/managed-load.js';
import { signAppToken } from '../../src/services/apps/tokens.js';

const OPERATOR = 'operator-token-of-the-race-test-0123456789';
const ROUNDS = 100;

interface Installation {
  bases: string[];
  dataDir: string;
  children: ChildProcess[];
  direct: pg.Client;
}

/**
 * Four API processes started at once on the empty database `env` points at (the first two with a
 * creates' thread: the Idempotency-Key races cross it), then, once the accounts they name are funded,
 * two worker processes at once (they record the relayer set and deploy the forwarder).
 */
async function startFour(env: Record<string, string>, node: ExternalNode, directUrl: string, children: ChildProcess[]): Promise<Installation> {
  const dataDir = tempDir('mintworks-races-');
  const ports = [await freePort(), await freePort(), await freePort(), await freePort()];
  const common = {
    ...env,
    DATA_DIR: dataDir,
    PUBLIC_URL: `http://127.0.0.1:${ports[0]}`,
    CHAIN_RPC_URL: node.url,
    DEMO_APP: 'false',
    MASTER_KEY: 'ab'.repeat(32),
    OPERATOR_TOKEN: OPERATOR,
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
  };
  const apis = ports.map((port, i) =>
    startService({ ...common, PORT: String(port), WORKERS: 'false', ...(i >= 2 ? { CREATES_THREAD: 'false' } : {}) }, `p${i}.log`),
  );
  children.push(...apis);
  const bases = ports.map((p) => `http://127.0.0.1:${p}`);
  for (const [i, base] of bases.entries()) {
    await waitFor(`process ${i} answering`, async () => (await fetch(`${base}/health`).catch(() => null)) !== null, 180_000, 100);
  }
  // An external chain funds nobody: every account /health names gets gas.
  const health = await (await fetch(`${bases[0]}/health`)).text();
  for (const a of new Set(health.match(/0x[0-9a-fA-F]{40}/g) ?? [])) await node.fund(a, 10n ** 24n);
  const workerEnv = { ...common, PORT: '0', API: 'false' };
  children.push(startService(workerEnv, 'w0.log'), startService(workerEnv, 'w1.log'));
  for (const [i, base] of bases.entries()) await waitFor(`process ${i} ready`, async () => (await fetch(`${base}/health`)).status === 200, 180_000, 100);
  const direct = new pg.Client({ connectionString: directUrl });
  await direct.connect();
  return { bases, dataDir, children, direct };
}

const LOGS = ['p0.log', 'p1.log', 'p2.log', 'p3.log', 'w0.log', 'w1.log'];

/** One of each first write, read from the database while the processes run. */
async function assertWrittenOnce(inst: Installation): Promise<void> {
  const q = async (text: string) => (await inst.direct.query(text)).rows;
  const names = (await q('select name from kysely_migration')).map((r) => r.name as string);
  assert.equal(new Set(names).size, names.length);
  assert.ok(names.length >= 20, `${names.length} migrations recorded`);
  assert.equal((await q("select count(*)::int as n from meta where key = 'seed'"))[0].n, 1);
  assert.equal((await q("select value from meta where key = 'public_url'"))[0].value, inst.bases[0]);
  assert.deepEqual(
    (await q('select idx from relayers where idx >= 0 order by idx')).map((r) => r.idx),
    [0, 1],
    'the relayer set once',
  );
}

/** Once the processes have stopped (their logs are complete): one migration run, no error line. */
function assertLogs(inst: Installation): void {
  const logs = LOGS.map((f) => fs.readFileSync(path.join(inst.dataDir, f), 'utf8'));
  const migrated = logs.map((l) => l.split('\n').filter((x) => x.includes('"msg":"database migrated"')).length);
  assert.equal(
    migrated.reduce((a, b) => a + b, 0),
    1,
    `one process migrated (per process: ${migrated.join(', ')})`,
  );
  for (const f of LOGS) assert.deepEqual(errorLines(path.join(inst.dataDir, f)), [], `error lines of ${f} (${inst.dataDir})`);
}

/** An App with a user and a collection, through the first process. */
async function newApp(base: string): Promise<{ client: (port: number) => ApiClient; user: string; collection: string; app: string }> {
  const admin = new ApiClient(`${base}/admin/v1`, undefined, OPERATOR);
  const app = (await admin.post('/apps', { name: `Race ${randomUUID().slice(0, 8)}` })).body.data as { uid: string; api_key: string; api_secret: string };
  const token = await signAppToken(app.api_key, app.api_secret);
  const first = new ApiClient(`${base}/v1`, app.api_key, token);
  const user = (await first.post('/user', {})).body.data.uid as string;
  const collection = (await admin.post(`/apps/${app.uid}/collections`, { name: 'Races', symbol: 'RACE' })).body.data.uid as string;
  return { client: (port) => new ApiClient(`http://127.0.0.1:${port}/v1`, app.api_key, token), user, collection, app: app.uid };
}

const assetBody = (user: string, collection: string, ext: string) => ({
  user_uid: user,
  collection_uid: collection,
  asset_external_id: ext,
  data: { name: 'Race', unique_name: false, image_url: 'https://example.com/r.png', store_image_on_ipfs: false },
});

/** The Idempotency-Key and webhook races between the first two processes. */
async function races(inst: Installation): Promise<string> {
  const [a, b] = inst.bases.map((base) => Number(new URL(base).port));
  const { client, user, collection } = await newApp(inst.bases[0]);
  const [ca, cb] = [client(a), client(b)];
  const tally: Record<string, number> = {};
  const count = (what: string, ...statuses: number[]) => {
    const k = `${what} ${statuses.sort().join('+')}`;
    tally[k] = (tally[k] ?? 0) + 1;
  };
  for (let round = 0; round < ROUNDS; round++) {
    // Different bodies under one key: one is the request, the other is refused as a reuse (or while it runs).
    const key = randomUUID();
    const [x, y] = await Promise.all([
      ca.call('POST', '/asset', assetBody(user, collection, `a-${round}`), { 'Idempotency-Key': key }),
      cb.call('POST', '/asset', assetBody(user, collection, `b-${round}`), { 'Idempotency-Key': key }),
    ]);
    count('different bodies', x.status, y.status);
    const [won, lost] = x.status === 201 ? [x, y] : [y, x];
    assert.equal(won.status, 201, `round ${round}: ${x.raw} / ${y.raw}`);
    assert.ok(
      (lost.status === 422 && lost.body.error.detail.code === 'idempotency_key_reused') ||
        (lost.status === 409 && lost.body.error.detail.code === 'idempotency_key_in_use'),
      `round ${round}: ${lost.status} ${lost.raw}`,
    );
    // The same body under one key: one asset, answered twice (a replay) or once and a 409.
    const same = assetBody(user, collection, `s-${round}`);
    const key2 = randomUUID();
    const [p, q] = await Promise.all([
      ca.call('POST', '/asset', same, { 'Idempotency-Key': key2 }),
      cb.call('POST', '/asset', same, { 'Idempotency-Key': key2 }),
    ]);
    count('same body', p.status, q.status);
    for (const r of [p, q])
      assert.ok(r.status === 201 || (r.status === 409 && r.body.error.detail.code === 'idempotency_key_in_use'), `round ${round}: ${r.status} ${r.raw}`);
    const uids = new Set([p, q].filter((r) => r.status === 201).map((r) => r.body.data.uid));
    assert.equal(uids.size, 1, `round ${round}: one asset (${p.raw} / ${q.raw})`);
  }
  // The first webhook setting of an App, on both processes at once.
  const admins = [a, b].map((port) => new ApiClient(`http://127.0.0.1:${port}/admin/v1`, undefined, OPERATOR));
  for (let round = 0; round < ROUNDS; round++) {
    const app = (await admins[0].post('/apps', { name: `Hook ${round}` })).body.data.uid as string;
    const [x, y] = await Promise.all(admins.map((c, i) => c.call('PUT', `/apps/${app}/webhook`, { url: `https://hooks.example.com/${round}/${i}` })));
    count('webhook', x.status, y.status);
    assert.deepEqual([x.status, y.status].sort(), [200, 201], `round ${round}: ${x.raw} / ${y.raw}`);
    assert.equal((await inst.direct.query('select count(*)::int as n from webhook_endpoints where app_uid = $1', [app])).rows[0].n, 1);
  }
  return JSON.stringify(tally);
}

describe('processes racing on one PostgreSQL database', () => {
  let node: ExternalNode;
  let bouncer: PgBouncer;
  const cleanups: (() => Promise<void>)[] = [];
  before(async () => {
    node = await startExternalNode({ kind: 'anvil', blockTimeS: 1 });
    bouncer = await startPgBouncer({ server: { host: '127.0.0.1', port: 5432 }, poolSize: 20 });
  });
  after(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    bouncer?.stop();
    await node?.stop();
  });

  for (const through of ['a direct connection', 'PgBouncer in transaction mode'] as const) {
    it(`through ${through}: four processes started at once migrate once and serve${through === 'a direct connection' ? '' : '; Idempotency-Key and webhook races answer, never 500'}`, async () => {
      const db = await freshPostgres();
      cleanups.push(() => db.drop());
      const name = new URL(db.url).pathname.slice(1);
      const env: Record<string, string> = {
        DATABASE_POOL_SIZE: SHARED_PG_POOL_SIZE,
        ...(through === 'a direct connection' ? { DATABASE_URL: db.url } : { DATABASE_URL: bouncer.urlFor(name), DATABASE_POOL_MODE: 'transaction' }),
      };
      const children: ChildProcess[] = [];
      let direct: pg.Client | null = null;
      cleanups.push(async () => {
        await stopAll(children);
        await direct?.end();
      });
      const inst = await startFour(env, node, db.url, children);
      direct = inst.direct;
      await assertWrittenOnce(inst);
      // The races through the pooler (where a server session is nobody's): the harder road.
      const tally = through === 'a direct connection' ? 'started' : await races(inst);
      await stopAll(children);
      assertLogs(inst);
      fs.rmSync(inst.dataDir, { recursive: true, force: true }); // kept when a check failed: its logs
      process.stdout.write(`# through ${through}: ${tally}\n`);
    });
  }
});
