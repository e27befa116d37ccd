// test:exclusive — measures latency; run with the machine to itself (scripts/run-integration.mjs).
// A user's asset list whose plan cannot flip with the data: one user of an App holds nearly every
// asset (a vault or treasury user), another holds 5. The small user's list must read its own index
// entries, not walk the App's assets newest first filtering by owner, on both databases, whatever plan
// PostgreSQL keeps for the statement. The test checks the plans, and the one thing about speed a slow or
// busy machine also meets: the small user's list is within an order of magnitude (10x, median) of a
// user of an App of its own, measured in the same run (a list walking a million rows is hundreds of
// times slower). The latency figure itself (p99 <= 30 ms at 16 connections) is the scale bench's
// (bench/scale.ts, bench/README.md).
// The large user's rows are copied in bulk by SQL (ASSETS of them, a million by default). The 16
// connections come from `wrk`, a client of its own that costs little per request: a JavaScript client
// would take the cores it measures.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, sql } from 'kysely';
import type SQLite from 'better-sqlite3';
import { sqlObservers } from '../../src/store/sqlite/statements.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { wrk, type WrkResult } from '../helpers/wrk.js';
import { createCollection } from '../../src/services/collections/collections.js';
import { userAssetKeyPart } from '../../src/services/assets/reads.js';

const ASSETS = Number(process.env.LIST_PLAN_ASSETS ?? 1_000_000);
const CONNECTIONS = 16;
const SECONDS = 3;
/** Measured rounds of each list at the most. */
const ROUNDS = 5;
/** How much slower than a lone user's list the small user's may be: an order of magnitude. */
const AT_MOST_TIMES = 10;

for (const db of ['sqlite', 'postgres'] as const) {
  describe(`a small user's asset list beside a user of ${ASSETS} assets (${db})`, () => {
    let t: TestService;
    before(async () => {
      // No workers: the rows are the point, not their mints.
      t = await startTestService(db, { WORKERS: 'false', RATE_LIMIT: '0' });
    });
    after(async () => {
      await t?.stop();
    });

    it(`reads the user's own index, and answers within ${AT_MOST_TIMES}x of a lone user at ${CONNECTIONS} connections`, {
      timeout: 300_000,
    }, async () => {
      const app = await t.newApp();
      const { uid: collection } = await createCollection(t.svc.ctx, app.uid, { name: 'Vault', symbol: 'VLT', editable: false });
      const big = (await app.api.post('/user', {})).body.data.uid as string;
      const small = (await app.api.post('/user', {})).body.data.uid as string;
      const create = (user: string, id: string) =>
        app.api.post('/asset', {
          user_uid: user,
          collection_uid: collection,
          asset_external_id: id,
          data: { name: 'A', unique_name: false, image_url: 'https://example.com/a.png', store_image_on_ipfs: false },
        });
      const seed = await create(big, 'seed');
      assert.equal(seed.status, 201, seed.raw);
      // The big user's assets: minted and owned (most of them) and on their way (the rest), all older.
      const cols = (await t.svc.ctx.db.introspection.getTables()).find((x) => x.name === 'assets')!.columns.map((c) => c.name);
      const t0 = Date.now();
      const value = (c: string, i: string) =>
        ({
          uid: db === 'sqlite' ? `printf('%012d', 900000000000 + ${i})` : `lpad((900000000000 + ${i})::text, 12, '0')`,
          asset_external_id: `'bulk-' || ${i}`,
          token_id: `100 + ${i}`,
          owner_user_uid: `case when ${i} % 10 = 0 then null else mint_for_user_uid end`,
          mint_status: `case when ${i} % 10 = 0 then 'pending' else 'minted' end`,
          created_at: `'2020-01-01T00:00:00.000000Z'`,
        })[c] ?? `"${c}"`;
      const select = (i: string) => cols.map((c) => value(c, i)).join(', ');
      const list = cols.map((c) => `"${c}"`).join(', ');
      if (db === 'sqlite') {
        await sql
          .raw(
            `with recursive n(i) as (select 1 union all select i + 1 from n where i < ${ASSETS}) insert into assets (${list}) select ${select('n.i')} from assets, n where assets.uid = '${seed.body.data.uid}'`,
          )
          .execute(t.svc.ctx.db);
        // The load's aftermath done before anything is measured: its pages out of the WAL.
        await sql`pragma wal_checkpoint(truncate)`.execute(t.svc.ctx.db);
      } else {
        // Without the service's statement timeout: a million rows on a busy machine can outlast it.
        await t.svc.ctx.db.transaction().execute(async (tx) => {
          await sql`set local statement_timeout = 0`.execute(tx);
          await sql
            .raw(
              `insert into assets (${list}) select ${select('n.i')} from assets, generate_series(1, ${ASSETS}) as n(i) where assets.uid = '${seed.body.data.uid}'`,
            )
            .execute(tx);
        });
        // Vacuumed as well as analyzed, and a checkpoint: otherwise autovacuum and the checkpointer
        // (writing out the load's pages) take the cores and the disk during the measure.
        await sql`vacuum analyze assets`.execute(t.svc.ctx.db);
        await sql`checkpoint`.execute(t.svc.ctx.db);
      }
      process.stdout.write(`# ${db}: ${ASSETS} assets of one user inserted in ${Date.now() - t0} ms\n`);
      for (let i = 0; i < 5; i++) assert.equal((await create(small, `small-${i}`)).status, 201);

      const statements = new Map<string, SQLite.Database>();
      const observe = (text: string, database: SQLite.Database) => void statements.set(text, database);
      sqlObservers.add(observe);
      const page = await app.api.get(`/asset?user_uid=${small}`);
      sqlObservers.delete(observe);
      if (db === 'sqlite') {
        // The plans of the list (its halves, read apart): each searches its own index by App and user,
        // never the App's alone.
        const halves = [...statements].filter(([q]) => q.includes('"owned"') || q.includes('"coming"'));
        assert.ok(halves.length > 0, [...statements.keys()].join('\n'));
        const plan = halves.flatMap(([text, database]) =>
          (database.prepare(`explain query plan ${text}`).all(...Array((text.match(/\?/g) ?? []).length).fill('x')) as { detail: string }[]).map(
            (p) => p.detail,
          ),
        );
        process.stdout.write(`# plan:\n#   ${plan.join('\n#   ')}\n`);
        assert.ok(
          plan.some((d) => /USING (COVERING )?INDEX assets_owner_idx \(app_uid=\? AND owner_user_uid=\?/.test(d)),
          plan.join('\n'),
        );
        assert.ok(
          plan.some((d) => /USING (COVERING )?INDEX assets_unminted_for_idx \(app_uid=\? AND mint_for_user_uid=\?/.test(d)),
          plan.join('\n'),
        );
        assert.ok(!plan.some((d) => /assets_app_created_idx/.test(d)), plan.join('\n'));
      } else {
        // PostgreSQL's plans of the list's first page (its halves, read apart), on the table as it now is (analyzed).
        const [owned, coming, ownedUids] = (['owned', 'coming', 'ownedUids'] as const).map((part) => userAssetKeyPart(t.svc.ctx.db, app.uid, small, {}, part));
        const halves = [owned, coming, ownedUids];
        const explain = async (q: (typeof halves)[number]) =>
          (await t.svc.ctx.db.executeQuery<Record<string, string>>(CompiledQuery.raw(`explain ${q.sql}`, [...q.parameters]))).rows
            .map((r) => Object.values(r)[0])
            .join('\n');
        const plan = (await Promise.all(halves.map(explain))).join('\n');
        process.stdout.write(`# plan:\n#   ${plan.split('\n').join('\n#   ')}\n`);
        assert.match(plan, /assets_owner_idx/);
        assert.match(plan, /assets_unminted_for_idx/);
        assert.doesNotMatch(plan, /assets_app_created_idx/);
        // The plans the service runs: made for any user (a named statement's generic plan), on a
        // table where one user holds nearly every asset.
        const genericOf = (q: (typeof halves)[number]) =>
          t.svc.ctx.db.connection().execute(async (c) => {
            const literal = (v: unknown) => (typeof v === 'number' ? String(v) : `'${String(v)}'`);
            await sql`set plan_cache_mode = force_generic_plan`.execute(c);
            await sql.raw(`prepare list_plan as ${q.sql}`).execute(c);
            const rows = (await sql.raw<Record<string, string>>(`explain execute list_plan(${q.parameters.map(literal).join(', ')})`).execute(c)).rows;
            await sql`deallocate list_plan`.execute(c);
            await sql`reset plan_cache_mode`.execute(c);
            return rows.map((r) => Object.values(r)[0]).join('\n');
          });
        const generic = [await genericOf(owned), await genericOf(coming), await genericOf(ownedUids)].join('\n');
        process.stdout.write(`# generic plan:\n#   ${generic.split('\n').join('\n#   ')}\n`);
        assert.match(generic, /assets_owner_idx/);
        assert.match(generic, /assets_unminted_for_idx/);
        assert.doesNotMatch(generic, /assets_app_created_idx/);
      }
      assert.equal(page.status, 200, page.raw);
      assert.equal(page.body.data.length, 5);
      assert.equal((await app.api.get(`/asset?user_uid=${big}&limit=10`)).body.data.length, 10);

      // The baseline, measured in the same run: a user of 5 assets in an App of its own.
      const other = await t.newApp();
      const { uid: otherCollection } = await createCollection(t.svc.ctx, other.uid, { name: 'Plain', symbol: 'PLN', editable: false });
      const alone = (await other.api.post('/user', {})).body.data.uid as string;
      for (let i = 0; i < 5; i++)
        assert.equal(
          (
            await other.api.post('/asset', {
              user_uid: alone,
              collection_uid: otherCollection,
              asset_external_id: `alone-${i}`,
              data: { name: 'A', unique_name: false, image_url: 'https://example.com/a.png', store_image_on_ipfs: false },
            })
          ).status,
          201,
        );

      // Under load: 16 connections asking for the small user's list, then as many for the baseline's
      // (after a second of both unmeasured: compiled code and pooled connections warm).
      const auth = (a: typeof app) => ({ 'X-API-KEY': a.apiKey, Authorization: `Bearer ${a.api.token}` });
      await wrk(`${app.api.base}/asset?user_uid=${small}`, auth(app), CONNECTIONS, 1);
      await wrk(`${other.api.base}/asset?user_uid=${alone}`, auth(other), CONNECTIONS, 1);
      // Up to five times each, in turn, the best of each kept: neither gains from going second, and a
      // moment the shared machine gave to something else does not decide (in CI the first runs after the
      // bulk load were slower for both lists alike). The rounds stop once the bests so far meet the check:
      // a later round could only change that by a lone user's list many times faster than in any before.
      const runs: { mixed: WrkResult[]; baseline: WrkResult[] } = { mixed: [], baseline: [] };
      const best = (rs: WrkResult[]) => rs.reduce((a, b) => (b.p50 < a.p50 ? b : a));
      // The floor of 1 ms keeps a sub-millisecond baseline from making the check a wall-clock budget.
      const within = () => best(runs.mixed).p50 <= AT_MOST_TIMES * Math.max(best(runs.baseline).p50, 1);
      for (let round = 0; round < ROUNDS && !(round > 0 && within()); round++) {
        runs.mixed.push(await wrk(`${app.api.base}/asset?user_uid=${small}`, auth(app), CONNECTIONS, SECONDS));
        runs.baseline.push(await wrk(`${other.api.base}/asset?user_uid=${alone}`, auth(other), CONNECTIONS, SECONDS));
      }
      const [mixed, baseline] = [best(runs.mixed), best(runs.baseline)];
      const line = (rs: WrkResult[]) =>
        rs.map((r) => `p50 ${r.p50.toFixed(1)} / p90 ${r.p90.toFixed(1)} / p99 ${r.p99.toFixed(1)} ms, ${Math.round(r.perSecond)}/s`).join('; ');
      process.stdout.write(`# ${db}: ${CONNECTIONS} connections: beside the big user ${line(runs.mixed)}; alone ${line(runs.baseline)}\n`);
      if (db === 'postgres') {
        // The service's connections ran the list on that one plan, not planning it at each request.
        const prepared = (
          await sql<{ statement: string; generic_plans: string }>`select statement, generic_plans from pg_prepared_statements`.execute(t.svc.ctx.db)
        ).rows.filter((r) => r.statement.includes('"owned"'));
        assert.ok(
          prepared.some((r) => Number(r.generic_plans) > 0),
          `the list ran on a generic plan: ${JSON.stringify(prepared.map((r) => r.generic_plans))}`,
        );
      }
      assert.equal(
        [...runs.mixed, ...runs.baseline].reduce((n, r) => n + r.errors, 0),
        0,
        'every answer a 200',
      );
      assert.ok(within(), `median ${mixed.p50.toFixed(1)} ms beside the big user, ${baseline.p50.toFixed(1)} ms for a user of an App of its own`);
    });
  });
}
