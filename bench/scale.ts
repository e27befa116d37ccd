// Flat at a million: the Demo App is bulk-loaded (by SQL, the service stopped) with 10k and then 1M
// assets, as many again owned by one vault user (the shape where a user's list used to walk the App's
// assets), and users, transfers, burns, events, webhook deliveries and attempts in proportion; at each
// size the service is started (timed) and every read endpoint of /v1 and /admin/v1 is measured at 16
// connections. Then retention runs over the loaded history (table sizes before and after). One JSON
// line per database.
//   node --import tsx bench/scale.ts      (BENCH_DB=sqlite|postgres; BENCH_SCALE_SIZES=10000,1000000;
//                                          BENCH_SECONDS=3 per endpoint after BENCH_WARMUP_SECONDS=3;
//                                          BENCH_SCALE_READS=vault: only the reads whose name holds it;
//                                          BENCH_CLIENT=wrk: the load from wrk,
//                                          a C client in a process of its own, instead of autocannon in
//                                          this one, which on 2 cores competes with the service: parsing a
//                                          page of 700 KB costs it about what writing the page costs the
//                                          service)
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import type { Store } from '../src/store/db.js';
import { openStore } from '../src/store/open.js';
import { userListIndexes } from '../src/store/migrations/018_user_list_indexes.js';
import { ownerIndexBurned } from '../src/store/migrations/029_owner_index_burned.js';
import { pruneOnce } from '../src/services/retention.js';
import { JobQueue } from '../src/jobs/queue.js';
import { ApiClient, waitFor } from '../test/helpers/env.js';
import { wrk } from '../test/helpers/wrk.js';
import { dbsFromArgs, emit, launchService, load, prepareServiceEnv, readDemo, waitDeployed, type ServiceEnv } from './lib.js';

const SIZES = (process.env.BENCH_SCALE_SIZES ?? '10000,1000000').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const CONNECTIONS = 16;
const DAY = 86_400_000;
const SEED_AT = Date.now() - 60 * DAY; // the loaded history is older than the retention period

interface Ids {
  app: string;
  collection: string;
}

/** The vault user's uid (outside the seeded users' range). */
const VAULT_USER = '199999999999';

/**
 * A read at CONNECTIONS connections for SECONDS, after WARMUP_SECONDS of the same load (JIT, the
 * service's caches, the database's buffers), by the chosen client; the warm-up's own p99 is reported too.
 * On a slow 2-core machine, PostgreSQL's vault page after a 1 s warm-up: p99 146 ms over the next 3 s,
 * then 78, 77, 70 and 87 ms over the 3 s after each.
 */
async function measureRead(url: string, headers: Record<string, string>) {
  if (process.env.BENCH_CLIENT === 'wrk') {
    const warm = await wrk(url, headers, CONNECTIONS, WARMUP_SECONDS);
    const r = await wrk(url, headers, CONNECTIONS, SECONDS);
    return { p50: r.p50, p99: r.p99, rps: Math.round(r.perSecond), non2xx: r.errors, warmup_p99: warm.p99 };
  }
  const warm = await load({ url, headers, connections: CONNECTIONS, seconds: WARMUP_SECONDS });
  const r = await load({ url, headers, connections: CONNECTIONS, seconds: SECONDS });
  return { p50: r.p50, p99: r.p99, rps: r.rps, non2xx: r.non2xx, warmup_p99: warm.p99 };
}

/** Seeds rows [from, to) of every table by one INSERT … SELECT per table over a generated series. */
async function seed(store: Store, ids: Ids, from: number, to: number): Promise<void> {
  const pg = store.dialect === 'postgres';
  // The series, and the few expressions that differ between the dialects.
  const series = pg
    ? `generate_series(${from}, ${to - 1}) as g(i)`
    : `(with recursive s(i) as (select ${from} union all select i + 1 from s where i < ${to - 1}) select i from s) as g`;
  const uid = (base: number, e = 'i') => (pg ? `(${base} + ${e})::text` : `cast(${base} + ${e} as text)`);
  const hex40 = (e: string) => (pg ? `'0x' || lpad(to_hex(${e}), 40, '0')` : `printf('0x%040x', ${e})`);
  const iso = (e: string) =>
    pg
      ? `to_char(to_timestamp((${SEED_AT} + ${e}) / 1000.0) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
      : `strftime('%Y-%m-%dT%H:%M:%fZ', (${SEED_AT} + ${e}) / 1000.0, 'unixepoch')`;
  const uuid = (e: string) => (pg ? `'00000000-0000-4000-8000-' || lpad(${e}::text, 12, '0')` : `printf('00000000-0000-4000-8000-%012d', ${e})`);
  const a = `'${ids.app}'`;
  const userOf = `(i / 10)`; // ten assets per user
  const run = (q: string) => sql.raw(q).execute(store.db);
  const usersFrom = Math.ceil(from / 10);
  const usersTo = Math.ceil(to / 10);
  if (usersTo > usersFrom) {
    const us = pg
      ? `generate_series(${usersFrom}, ${usersTo - 1}) as g(i)`
      : `(with recursive s(i) as (select ${usersFrom} union all select i + 1 from s where i < ${usersTo - 1}) select i from s) as g`;
    await run(`insert into users (uid, app_uid, email, user_external_id, wallet_address, wallet_created_at, created_at)
      select ${uid(200000000000)}, ${a}, 'seed' || i || '@example.com', 'seed-' || i, ${hex40('i + 1')}, ${iso('i')}, ${iso('i')} from ${us}`);
  }
  await run(`insert into assets (uid, app_uid, collection_uid, asset_external_id, mint_for_user_uid, name, unique_name_key, token_id, mint_status, mint_error, mint_tx_id,
      is_burned, is_transferring, is_editing, owner_user_uid, owner_address, mint_for_address, token_uri, sale_price_in_usd, metadata, created_at, updated_at, is_burning, pending_edit, pending_token_uri, store_image)
    select ${uid(300000000000)}, ${a}, '${ids.collection}', 'seed-' || i, ${uid(200000000000, userOf)}, 'Seed ' || i, null, 10000000 + i, 'minted', null, null,
      0, 0, 0, ${uid(200000000000, userOf)}, ${hex40(`${userOf} + 1`)}, ${hex40(`${userOf} + 1`)}, 'http://127.0.0.1/metadata/' || i, '9.99', '{"name":"Seed","description":"seeded"}', ${iso('i')}, ${iso('i')}, 0, null, null, 0
    from ${series}`);
  // A vault user: as many assets again as the others hold, all owned by one user of the App (a
  // treasury). The probe user's list (5 assets) must not read them: its plan cannot flip to the App's.
  if (from === 0) {
    await run(
      `insert into users (uid, app_uid, email, user_external_id, wallet_address, wallet_created_at, created_at) values ('${VAULT_USER}', ${a}, 'vault@example.com', 'vault', ${hex40('1')}, ${iso('0')}, ${iso('0')})`,
    );
  }
  await run(`insert into assets (uid, app_uid, collection_uid, asset_external_id, mint_for_user_uid, name, unique_name_key, token_id, mint_status, mint_error, mint_tx_id,
      is_burned, is_transferring, is_editing, owner_user_uid, owner_address, mint_for_address, token_uri, sale_price_in_usd, metadata, created_at, updated_at, is_burning, pending_edit, pending_token_uri, store_image)
    select ${uid(600000000000)}, ${a}, '${ids.collection}', 'vault-' || i, '${VAULT_USER}', 'Vault ' || i, null, 50000000 + i, 'minted', null, null,
      0, 0, 0, '${VAULT_USER}', ${hex40('1')}, ${hex40('1')}, 'http://127.0.0.1/metadata/v' || i, null, '{"name":"Vault"}', ${iso('i')}, ${iso('i')}, 0, null, null, 0
    from ${series}`);
  for (const table of ['transfers', 'burns']) {
    const extra = table === 'transfers' ? `, to_address` : '';
    const extraV = table === 'transfers' ? `, ${hex40('i + 7')}` : '';
    await run(`insert into ${table} (uid, app_uid, asset_uid, from_user_uid${extra}, status, reason, attempts, created_at, updated_at)
      select ${uid(table === 'transfers' ? 400000000000 : 500000000000)}, ${a}, ${uid(300000000000)}, ${uid(200000000000, userOf)}${extraV}, 'done', null, 1, ${iso('i')}, ${iso('i')}
      from ${series} where i % 20 = ${table === 'transfers' ? 0 : 10}`);
  }
  await run(
    `insert into events (id, app_uid, type, payload, event_time, created_at_ms) select ${uuid('i')}, ${a}, 'asset.minted', '{"asset":{}}', ${iso('i')}, ${SEED_AT} + i from ${series}`,
  );
  await run(`insert into webhook_deliveries (event_id, app_uid, event_type, status, attempts, event_time_ms, deadline_at, next_attempt_at, last_attempt_at, last_status_code, last_error, delivered_at, recent_attempts, lease_until, locked_by, created_at_ms, updated_at_ms)
    select ${uuid('i')}, ${a}, 'asset.minted', 'delivered', 1, ${SEED_AT} + i, ${SEED_AT + 3 * DAY} + i, null, ${SEED_AT} + i, 200, null, ${SEED_AT} + i, '[]', null, null, ${SEED_AT} + i, ${SEED_AT} + i from ${series}`);
  await run(`insert into webhook_attempts (event_id, app_uid, attempt, attempted_at, url, status_code, latency_ms, error, response_body)
    select ${uuid('i')}, ${a}, 1, ${SEED_AT} + i, 'https://example.com/hook', 200, 3, null, 'ok' from ${series}`);
  // PostgreSQL: vacuumed, analyzed and checkpointed, as autovacuum and the checkpointer leave a database a
  // little while after such a load, so the reads do not run beside that work. (The vault page's slow
  // first seconds were not that work but the warm-up: 854 ms of p99 over 3 s after a vacuum; see measureRead.)
  if (pg) {
    await run('vacuum analyze');
    await run('checkpoint');
  }
}

async function tableSizes(store: Store): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of ['assets', 'users', 'events', 'webhook_deliveries', 'webhook_attempts', 'jobs', 'chain_txs']) {
    out[t] = Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(t)}`.execute(store.db)).rows[0].n);
  }
  return out;
}

for (const db of dbsFromArgs()) {
  const se: ServiceEnv = await prepareServiceEnv(db, { DEMO_APP: 'true', RETENTION_DAYS: '0' });
  try {
    // The Demo App, its deployed collection, a webhook, and a probe user with five real assets.
    let proc = await launchService(se.env, { logName: 'setup.log' });
    const demo = readDemo(se.dataDir);
    const api = new ApiClient(demo.url, demo.apiKey, demo.token);
    await waitDeployed(api, demo.collection);
    const probe = (await api.post('/user', { email: 'probe@example.com', user_external_id: 'probe' })).body.data.uid as string;
    const probeAssets: string[] = [];
    for (let i = 0; i < 5; i++)
      probeAssets.push(
        (
          await api.post('/asset', {
            user_uid: probe,
            collection_uid: demo.collection,
            asset_external_id: `probe-${i}`,
            data: { name: 'Probe', unique_name: false, image_url: 'https://example.com/p.png', store_image_on_ipfs: false },
          })
        ).body.data.uid,
      );
    await waitFor(
      'probe assets minted',
      async () => (await api.get(`/asset?user_uid=${probe}`)).body.data.every((x: { is_minted: boolean }) => x.is_minted),
      60_000,
      200,
    );
    await proc.stop();

    const results: Record<string, unknown>[] = [];
    let loaded = 0;
    for (const size of SIZES) {
      const store = openStore({ databaseUrl: se.env.DATABASE_URL, dataDir: se.dataDir });
      const s0 = performance.now();
      await seed(store, { app: demo.app, collection: demo.collection }, loaded, size);
      const seedSeconds = (performance.now() - s0) / 1000;
      loaded = size;
      await store.close();

      const t0 = performance.now();
      proc = await launchService(se.env, { logName: `scale-${size}.log`, pollMs: 50 });
      const startSeconds = (proc.healthyAt - t0) / 1000;
      const operator = fs.readFileSync(path.join(se.dataDir, 'operator.token'), 'utf8').trim();
      const seededUser = String(200000000000 + Math.floor(size / 20));
      const event = `00000000-0000-4000-8000-${String(Math.floor(size / 2)).padStart(12, '0')}`;
      const v1 = `${proc.base}/v1`;
      const adm = `${proc.base}/admin/v1`;
      const reads: [string, string, 'app' | 'operator'][] = [
        ['GET /user/:uid', `${v1}/user/${probe}`, 'app'],
        ['GET /user?email', `${v1}/user?email=seed${Math.floor(size / 20)}@example.com`, 'app'],
        ['GET /user?user_external_id', `${v1}/user?user_external_id=seed-${Math.floor(size / 20)}`, 'app'],
        ['GET /collection/:uid', `${v1}/collection/${demo.collection}`, 'app'],
        ['GET /asset/:uid', `${v1}/asset/${probeAssets[0]}`, 'app'],
        ['GET /asset/:uid (seeded)', `${v1}/asset/${300000000000 + Math.floor(size / 2)}`, 'app'],
        ['GET /asset?user_uid (5 assets)', `${v1}/asset?user_uid=${probe}`, 'app'],
        ['GET /asset?user_uid (vault user, first page)', `${v1}/asset?user_uid=${VAULT_USER}`, 'app'],
        ['GET /asset?user_uid (10 seeded)', `${v1}/asset?user_uid=${seededUser}`, 'app'],
        ['GET /transfer?user_uid', `${v1}/transfer?user_uid=${seededUser}`, 'app'],
        ['GET /burn?user_uid', `${v1}/burn?user_uid=${seededUser}`, 'app'],
        ['GET /deposit', `${v1}/deposit?user_uid=${probe}&collection_uid=${demo.collection}`, 'app'],
        ['GET /reward/allocation?user_uid', `${v1}/reward/allocation?user_uid=${probe}`, 'app'],
        ['GET /reward/claim?user_uid', `${v1}/reward/claim?user_uid=${probe}`, 'app'],
        ['GET /admin/v1/apps', `${adm}/apps`, 'operator'],
        ['GET /admin/v1/apps/:uid/collections', `${adm}/apps/${demo.app}/collections`, 'operator'],
        ['GET /admin/v1/apps/:uid/users?limit=50', `${adm}/apps/${demo.app}/users?limit=50`, 'operator'],
        ['GET /admin/v1/apps/:uid/webhook/events?limit=50', `${adm}/apps/${demo.app}/webhook/events?limit=50`, 'operator'],
        ['GET /admin/v1/…/events/:id/attempts', `${adm}/apps/${demo.app}/webhook/events/${event}/attempts`, 'operator'],
      ];
      const measured: Record<string, { p50: number; p99: number; rps: number; non2xx: number; warmup_p99: number }> = {};
      const only = process.env.BENCH_SCALE_READS; // a part of the reads' names (e.g. "vault"): only those are measured
      for (const [name, url, who] of reads.filter(([n]) => !only || n.includes(only))) {
        const headers: Record<string, string> =
          who === 'app' ? { 'x-api-key': demo.apiKey, authorization: `Bearer ${demo.token}` } : { authorization: `Bearer ${operator}` };
        measured[name] = await measureRead(url, headers);
      }
      await proc.stop();
      results.push({ assets: size, seed_s: +seedSeconds.toFixed(1), start_s: +startSeconds.toFixed(2), reads: measured });
      process.stderr.write(`${db} ${size}: seeded in ${seedSeconds.toFixed(1)} s, started in ${startSeconds.toFixed(2)} s\n`);
    }

    // The users' list indexes rebuilt on the loaded database, as migration 018 does at an upgrade (it
    // drops and recreates the owner and unminted-recipient indexes and adds those of the rare statuses,
    // dropped here first). It runs by itself: the migrator has it recorded as run.
    const store = openStore({ databaseUrl: se.env.DATABASE_URL, dataDir: se.dataDir });
    for (const name of ['assets_failed_idx', 'assets_transferring_idx', 'assets_burning_idx', 'assets_burned_idx'])
      await store.db.schema.dropIndex(name).execute();
    const m0 = performance.now();
    await userListIndexes(store.dialect).up(store.db);
    const migrationSeconds = (performance.now() - m0) / 1000;
    // And the owner index with the burned flag (migration 029) over it, as an upgrade to it does.
    const m1 = performance.now();
    await ownerIndexBurned().up(store.db);
    const ownerIndexSeconds = (performance.now() - m1) / 1000;

    // Retention over the loaded history (60 days old): sizes before and after.
    const before = await tableSizes(store);
    const ctx = { db: store.db, queue: new JobQueue(store.db, store.dialect) };
    const r0 = performance.now();
    const pruned = await pruneOnce(ctx, 30);
    const retentionSeconds = (performance.now() - r0) / 1000;
    const after = await tableSizes(store);
    await store.close();

    const [small, large] = [results[0], results[results.length - 1]] as { assets: number; reads: Record<string, { p99: number }> }[];
    const flat = Object.fromEntries(
      Object.keys(large.reads).map((k) => [
        k,
        { p99_small: small.reads[k].p99, p99_large: large.reads[k].p99, ok: large.reads[k].p99 <= Math.max(1.5 * small.reads[k].p99, 30) },
      ]),
    );
    emit({
      bench: 'scale',
      db,
      connections: CONNECTIONS,
      client: process.env.BENCH_CLIENT === 'wrk' ? 'wrk' : 'autocannon',
      seconds: SECONDS,
      sizes: results,
      flat,
      all_flat: Object.values(flat).every((f) => f.ok),
      migration_at_largest_s: +migrationSeconds.toFixed(2),
      owner_index_migration_at_largest_s: +ownerIndexSeconds.toFixed(2),
      retention: { seconds: +retentionSeconds.toFixed(1), pruned, before, after },
    });
  } finally {
    await se.dispose();
  }
}
