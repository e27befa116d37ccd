// What the operator does leaves a trace anyone can check, and guessing the operator token stays slow,
// against a real service once per database:
//  - every route of /admin/v1 and /console/api that changes state writes an audit entry (the routes are
//    read from the server itself: a new one without a case here fails the test);
//  - the database refuses to edit or delete an audit entry; an entry rewritten behind its back (its
//    trigger dropped) makes `mintworks audit verify` exit 1 naming it, and the console's check says so;
//  - concurrent appends from two connections never fork the chain;
//  - 10 wrong tokens lock an address; 10,002 failures from other addresses do not unlock it; the global
//    budget answers 429 with Retry-After; (PostgreSQL) a second API process sees the same counts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { ApiClient, freePort, waitFor } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { routesOf } from '../../src/http/app.js';
import { operatorAttempts } from '../../src/http/kit/operator-attempts.js';
import type { FastifyRequest } from 'fastify';
import { recordAudit } from '../../src/services/audit.js';
import { createUser } from '../../src/services/users/users.js';
import { sqliteFile } from '../../src/store/sqlite/open.js';
import { openStore } from '../../src/store/open.js';
import { loadConfig } from '../../src/config/config.js';
import { startService } from '../../src/boot/service.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const GLOBAL_BUDGET = 10_100;

type Case = (c: { app: string; user: string; reward: string; reward2: string; event: () => Promise<string> }) => Promise<{ status: number; raw: string }>;

export function operatorSafetySuite(db: 'sqlite' | 'postgres'): void {
  describe(`operator safety (${db})`, () => {
    let t: TestService;
    let operator: string;
    let admin: ApiClient;
    let cookie = '';
    /** Raw SQL on the service's database, as its owner (what someone holding the credentials could run). */
    let rawSql: (q: string) => Promise<void>;
    let closeRaw: () => Promise<void>;

    const consoleCall = async (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => {
      const h: Record<string, string> = { origin: t.svc.url, 'sec-fetch-site': 'same-origin', ...(cookie ? { cookie } : {}), ...headers };
      if (body !== undefined) h['content-type'] = 'application/json';
      const res = await fetch(`${t.svc.url}/console/api${p}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
      const raw = await res.text();
      return { status: res.status, raw, body: raw ? JSON.parse(raw) : undefined, headers: res.headers };
    };
    const auditCount = async () =>
      Number(
        (
          await t.svc.ctx.db
            .selectFrom('audit_log')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const cli = (args: string[]) =>
      run(process.execPath, [path.join(root, 'bin/mintworks.js'), ...args], {
        env: { ...process.env, DATA_DIR: t.dataDir, ...(db === 'postgres' ? { DATABASE_URL: t.svc.ctx.config.databaseUrl } : {}) },
      }).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
      );

    before(async () => {
      t = await startTestService(db, { TRUST_PROXY: '127.0.0.1', OUTBOUND_ALLOW_PRIVATE: 'true', OPERATOR_AUTH_GLOBAL_FAILURES: String(GLOBAL_BUDGET) });
      operator = t.svc.ctx.installation.operatorToken!;
      admin = new ApiClient(`${t.svc.url}/admin/v1`, undefined, operator);
      if (db === 'sqlite') {
        const conn = new SQLite(sqliteFile(undefined, t.dataDir));
        // Busy waits asynchronously: SQLite's own busy handler would block this event loop, which the
        // service in this process needs to finish the write that holds the lock.
        conn.pragma('busy_timeout = 0');
        rawSql = async (q) => {
          for (let tries = 0; ; tries++) {
            try {
              return void conn.exec(q);
            } catch (err) {
              if ((err as { code?: string }).code !== 'SQLITE_BUSY' || tries >= 400) throw err;
              await new Promise((r) => setTimeout(r, 25));
            }
          }
        };
        closeRaw = async () => void conn.close();
      } else {
        const client = new pg.Client({ connectionString: t.svc.ctx.config.databaseUrl });
        await client.connect();
        rawSql = async (q) => void (await client.query(q));
        closeRaw = () => client.end();
      }
    });
    after(async () => {
      await closeRaw?.();
      await t?.stop();
    });

    it('every route that changes state writes an audit entry', { timeout: 300_000 }, async () => {
      const signIn = await consoleCall('POST', '/session', { token: operator });
      assert.equal(signIn.status, 200, signIn.raw);
      cookie = signIn.headers.get('set-cookie')!.split(';')[0];
      const app = await t.newApp();
      const appUid = app.uid;
      const user = (await createUser(t.svc.ctx, appUid, { user_external_id: 'audited-user' })).uid;
      const collection = await t.newCollection(appUid, false);
      const deposit = await app.api.get(`/deposit?user_uid=${user}&collection_uid=${collection}`); // the user's wallet
      assert.equal(deposit.status, 200, deposit.raw);
      const newReward = async () => {
        const uid = (await admin.post(`/apps/${appUid}/rewards`, { name: 'P', token_name: 'P', token_symbol: 'P', supply: '1000' })).body.data.uid as string;
        await waitFor('reward deployed', async () => (await admin.get(`/apps/${appUid}/rewards/${uid}`)).body.data.status === 'deployed', 60_000);
        return uid;
      };
      const [reward, reward2] = [await newReward(), await newReward()];
      const hook = { url: 'http://127.0.0.1:9/hook' };
      const key = () => ({ recipient_public_key: randomBytes(32).toString('base64url') });
      const chain = t.svc.ctx.config.chains[0].id;

      // Each case performs the act (successfully) once; the expected action is checked on the newest entry.
      const cases: Record<string, [string, Case]> = {
        'POST /admin/v1/apps': ['app.created', () => admin.post('/apps', { name: 'A2' })],
        'POST /admin/v1/apps/:uid/collections': ['collection.created', (c) => admin.post(`/apps/${c.app}/collections`, { name: 'C', symbol: 'C' })],
        'PATCH /admin/v1/apps/:uid/collections/:collection': [
          'collection.updated',
          (c) => admin.call('PATCH', `/apps/${c.app}/collections/${collection}`, { royalty_receiver: `0x${'2'.repeat(40)}`, royalty_bps: 100 }),
        ],
        'PUT /admin/v1/apps/:uid/webhook': ['webhook.created', (c) => admin.call('PUT', `/apps/${c.app}/webhook`, hook)],
        'POST /admin/v1/apps/:uid/webhook/events/:id/redeliver': [
          'webhook.redelivered',
          async (c) => admin.post(`/apps/${c.app}/webhook/events/${await c.event()}/redeliver`),
        ],
        'POST /admin/v1/apps/:uid/rewards': [
          'reward.created',
          (c) => admin.post(`/apps/${c.app}/rewards`, { name: 'Q', token_name: 'Q', token_symbol: 'Q', supply: '5' }),
        ],
        'POST /admin/v1/apps/:uid/rewards/:reward/withdraw': ['reward.withdrawn', (c) => admin.post(`/apps/${c.app}/rewards/${c.reward}/withdraw`)],
        'POST /admin/v1/apps/:uid/users/:user/wallet-export': ['wallet.exported', (c) => admin.post(`/apps/${c.app}/users/${c.user}/wallet-export`, key())],
        'POST /admin/v1/chains/:chain_id/resync': ['chain.resynced', () => admin.post(`/chains/${chain}/resync`)],
        'POST /console/api/session': ['operator.signed_in', () => consoleCall('POST', '/session', { token: operator })],
        'DELETE /console/api/session': [
          'operator.signed_out',
          async () => {
            const r = await consoleCall('DELETE', '/session');
            const again = await consoleCall('POST', '/session', { token: operator }); // signed in again for the cases after it
            cookie = again.headers.get('set-cookie')!.split(';')[0];
            return r;
          },
        ],
        'POST /console/api/apps': ['app.created', () => consoleCall('POST', '/apps', { name: 'A3' })],
        'POST /console/api/apps/:uid/collections': ['collection.created', (c) => consoleCall('POST', `/apps/${c.app}/collections`, { name: 'D', symbol: 'D' })],
        'PATCH /console/api/apps/:uid/collections/:collection': [
          'collection.updated',
          (c) => consoleCall('PATCH', `/apps/${c.app}/collections/${collection}`, { description: 'changed' }),
        ],
        'POST /console/api/apps/:uid/keys/rotate': ['app.secret_rotated', (c) => consoleCall('POST', `/apps/${c.app}/keys/rotate`)],
        'POST /console/api/apps/:uid/keys/token': ['app.token_issued', (c) => consoleCall('POST', `/apps/${c.app}/keys/token`, {})],
        'PUT /console/api/apps/:uid/webhook': ['webhook.secret_rotated', (c) => consoleCall('PUT', `/apps/${c.app}/webhook`, { rotate_secret: true })],
        'POST /console/api/apps/:uid/webhook/test': ['webhook.tested', (c) => consoleCall('POST', `/apps/${c.app}/webhook/test`)],
        'POST /console/api/apps/:uid/webhook/events/:id/redeliver': [
          'webhook.redelivered',
          async (c) => consoleCall('POST', `/apps/${c.app}/webhook/events/${await c.event()}/redeliver`),
        ],
        'POST /console/api/apps/:uid/rewards': [
          'reward.created',
          (c) => consoleCall('POST', `/apps/${c.app}/rewards`, { name: 'R', token_name: 'R', token_symbol: 'R', supply: '5' }),
        ],
        'POST /console/api/apps/:uid/rewards/:reward/allocations': [
          'reward.allocated',
          (c) => consoleCall('POST', `/apps/${c.app}/rewards/${c.reward}/allocations`, { to_user_uid: c.user, amount: '1' }),
        ],
        'POST /console/api/apps/:uid/rewards/:reward/claims': [
          'reward.claimed',
          (c) => consoleCall('POST', `/apps/${c.app}/rewards/${c.reward}/claims`, { from_user_uid: c.user, to_address: `0x${'1'.repeat(40)}` }),
        ],
        'POST /console/api/apps/:uid/rewards/:reward/withdraw': [
          'reward.withdrawn',
          (c) => consoleCall('POST', `/apps/${c.app}/rewards/${c.reward2}/withdraw`),
        ],
        'POST /console/api/apps/:uid/users/:user/wallet-export': [
          'wallet.exported',
          (c) => consoleCall('POST', `/apps/${c.app}/users/${c.user}/wallet-export`, key()),
        ],
        'POST /console/api/ops/chains/:chain_id/resync': ['chain.resynced', () => consoleCall('POST', `/ops/chains/${chain}/resync`)],
      };
      // Cancelling needs a transaction that waits or is stuck: test/integration/chain-ops.test.ts cancels one
      // through /admin/v1 and checks its entry (the console mounts the same route). A verify changes state
      // only with fix and a divergence to fix: test/integration/chain-verify-suite.ts seeds them and checks
      // one entry per fix.
      const elsewhere: Record<string, string> = {
        'POST /admin/v1/chains/:chain_id/transactions/:id/cancel': 'chain.tx_cancelled',
        'POST /console/api/ops/chains/:chain_id/transactions/:id/cancel': 'chain.tx_cancelled',
        'POST /admin/v1/chains/:chain_id/verify': 'chain.divergence_fixed',
        'POST /console/api/ops/chains/:chain_id/verify': 'chain.divergence_fixed',
      };

      const changing = (routesOf.get(t.svc.http!) ?? [])
        .flatMap((r) => (Array.isArray(r.method) ? r.method : [r.method]).map((m) => `${m} ${r.url}`))
        .filter((k) => /^(POST|PUT|PATCH|DELETE) \/(admin\/v1|console\/api)\//.test(k));
      assert.ok(changing.length > 20, `the server's routes are listed (${changing.length})`);
      const missing = changing.filter((k) => !cases[k] && !elsewhere[k]);
      assert.deepEqual(missing, [], 'a route that changes state has no audit case here: add one (and its audit entry)');

      // The withdrawals go last (a withdrawn reward takes no allocation or claim).
      const order = Object.keys(cases).sort((a, b) => Number(a.endsWith('/withdraw')) - Number(b.endsWith('/withdraw')));
      const event = async () => (await consoleCall('POST', `/apps/${appUid}/webhook/test`)).body.data.event_id as string;
      for (const k of order) {
        const [action, act] = cases[k];
        if (k.includes('/claims'))
          await waitFor(
            'allocation done',
            async () => (await t.svc.ctx.db.selectFrom('allocations').select('status').where('to_user_uid', '=', user).executeTakeFirst())?.status === 'done',
            60_000,
          );
        const before = await auditCount();
        const r = await act({ app: appUid, user, reward, reward2, event });
        assert.ok(r.status >= 200 && r.status < 300, `${k}: ${r.status} ${r.raw}`);
        const entries = await t.svc.ctx.db.selectFrom('audit_log').select(['action', 'actor']).where('seq', '>', before).execute();
        assert.ok(
          entries.some((e) => e.action === action),
          `${k} wrote ${JSON.stringify(entries)}, not ${action}`,
        );
        const actor = entries.find((e) => e.action === action)!.actor;
        assert.equal(actor, k.includes('/console/') ? 'console' : 'operator_token', k);
      }
    });

    it('the database refuses to edit or delete an audit entry; a rewrite behind its back is found and named', async () => {
      assert.ok((await auditCount()) > 5);
      await assert.rejects(rawSql(`update audit_log set action = 'nothing' where seq = 2`), /append-only/);
      await assert.rejects(rawSql('delete from audit_log where seq = 3'), /append-only/);
      await assert.rejects(rawSql('delete from audit_log'), /append-only/);
      if (db === 'postgres') await assert.rejects(rawSql('truncate audit_log'), /append-only/);
      const ok = await cli(['audit', 'verify', '--json']);
      assert.equal(ok.code, 0, ok.stdout + ok.stderr);
      const good = JSON.parse(ok.stdout);
      assert.equal(good.ok, true);
      assert.equal(good.entries, await auditCount());
      assert.equal((await consoleCall('GET', '/audit/verify')).body.data.ok, true);

      // Someone with the owner's rights drops the trigger and rewrites entry 2.
      const victim = await t.svc.ctx.db.selectFrom('audit_log').select(['uid']).where('seq', '=', 2).executeTakeFirstOrThrow();
      if (db === 'sqlite') await rawSql(`drop trigger audit_log_no_update; update audit_log set details = '{}' where seq = 2`);
      else await rawSql(`alter table audit_log disable trigger audit_log_append_only; update audit_log set details = '{}' where seq = 2`);
      const bad = await cli(['audit', 'verify', '--json']);
      assert.equal(bad.code, 1, bad.stdout + bad.stderr);
      const broken = JSON.parse(bad.stdout);
      assert.equal(broken.ok, false);
      assert.equal(broken.broken.seq, 2);
      assert.equal(broken.broken.uid, victim.uid);
      const text = await cli(['audit', 'verify']);
      assert.equal(text.code, 1);
      assert.match(text.stdout, new RegExp(`BROKEN at entry 2 \\(${victim.uid}\\)`));
      const seen = (await consoleCall('GET', '/audit/verify')).body.data;
      assert.equal(seen.ok, false);
      assert.equal(seen.broken.uid, victim.uid);

      // The last entries removed (a head exported before still names them).
      const head = `${good.head.seq}:${good.head.hash}`;
      assert.equal((await cli(['audit', 'verify', '--head', head])).code, 1, 'still broken at 2');
    });

    it('two connections appending at once never fork the chain', async () => {
      // A second store on the same database: what another process of the installation would hold.
      const other = openStore({ databaseUrl: t.svc.ctx.config.databaseUrl, dataDir: t.dataDir, checkpoints: 'none' });
      try {
        // (entry 2 was rewritten above: the chain from 3 on is checked link by link here)
        const from = await auditCount();
        const actor = { kind: 'cli' as const, detail: 'test' };
        await Promise.all(
          Array.from({ length: 60 }, (_, i) => recordAudit(i % 2 ? t.svc.ctx.db : other.db, actor, { action: 'chain.resynced', details: { i } })),
        );
        const rows = await t.svc.ctx.db
          .selectFrom('audit_log')
          .select(['seq', 'prev_hash', 'hash'])
          .where('seq', '>', from - 1)
          .orderBy('seq')
          .execute();
        assert.equal(rows.length, 61);
        for (let i = 1; i < rows.length; i++) {
          assert.equal(Number(rows[i].seq), Number(rows[i - 1].seq) + 1);
          assert.equal(rows[i].prev_hash, rows[i - 1].hash, `entry ${rows[i].seq} follows ${rows[i - 1].seq}`);
        }
        const head = await t.svc.ctx.db.selectFrom('audit_head').selectAll().executeTakeFirstOrThrow();
        assert.equal(head.hash, rows[rows.length - 1].hash);
      } finally {
        await other.close();
      }
    });

    it('10 wrong tokens lock an address; 10,002 failures from other addresses do not unlock it; the global budget answers 429 with Retry-After', {
      timeout: 600_000,
    }, async () => {
      const attempt = (ip: string, token: string) =>
        fetch(`${t.svc.url}/admin/v1/apps`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': ip } });
      const locked = '203.0.113.7';
      for (let i = 0; i < 10; i++) assert.equal((await attempt(locked, `wrong-${i}`)).status, 401);
      const refused = await attempt(locked, operator);
      assert.equal(refused.status, 429, 'the right token is refused from a locked address');
      assert.ok(Number(refused.headers.get('retry-after')) > 0, 'Retry-After');
      // An IPv6 address counts by its /64: a neighbour in the /64 is locked with it.
      for (let i = 0; i < 10; i++) assert.equal((await attempt(`2001:db8:7:7::${i + 1}`, 'wrong')).status, 401);
      assert.equal((await attempt('2001:db8:7:7:ffff::1', operator)).status, 429);
      assert.equal((await attempt('2001:db8:7:8::1', operator)).status, 200, 'another /64 is not');

      // 10,002 failures from as many other addresses, a few at a time: counted as the routes count them
      // (the same object and database; over HTTP this takes minutes), a few of them over HTTP.
      const attempts = operatorAttempts(t.svc.ctx);
      let n = 0;
      const worker = async () => {
        while (n < 9_982) {
          const i = n++;
          await attempts.fail({ ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, url: '/admin/v1/apps' } as FastifyRequest);
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
      for (let i = 0; i < 20; i++) assert.equal((await attempt(`10.200.0.${i}`, `wrong-${i}`)).status, 401);
      assert.equal((await attempt(locked, operator)).status, 429, 'still locked after 10,002 failures elsewhere');
      const audited = await t.svc.ctx.db
        .selectFrom('audit_log')
        .select('action')
        .where('action', 'in', ['operator.sign_in_failed', 'operator.locked_out'])
        .execute();
      assert.ok(audited.length > 0 && audited.length < 300, `failed attempts audited, but not each one (${audited.length})`);

      // Up to the global budget: then every token is refused, from everywhere, with Retry-After.
      const used = Number(
        (await t.svc.ctx.db.selectFrom('operator_attempts').select('failures').where('scope', '=', 'global').executeTakeFirstOrThrow()).failures,
      );
      for (let i = used; i < GLOBAL_BUDGET; i++) await (await attempt(`198.51.${(i >> 8) & 255}.${i & 255}`, 'wrong')).arrayBuffer();
      const everyone = await attempt('192.0.2.99', operator);
      assert.equal(everyone.status, 429);
      assert.ok(Number(everyone.headers.get('retry-after')) > 0);
      assert.match(await everyone.text(), /from all addresses together/);
      const signIn = await fetch(`${t.svc.url}/console/api/session`, {
        method: 'POST',
        headers: { origin: t.svc.url, 'content-type': 'application/json', 'x-forwarded-for': '192.0.2.100' },
        body: JSON.stringify({ token: operator }),
      });
      assert.equal(signIn.status, 429, 'the console sign-in shares the budget');
      assert.ok(audited.length < 300);
      const lockouts = await t.svc.ctx.db.selectFrom('audit_log').select('details').where('action', '=', 'operator.locked_out').execute();
      assert.ok(
        lockouts.some((l) => JSON.parse(l.details).scope === 'global'),
        'the global lockout is audited',
      );

      if (db !== 'postgres') return;
      // A second API process on the same database (and chain) counts with the first: refused there too.
      const second = await startService(
        loadConfig({
          PORT: String(await freePort()),
          DATA_DIR: t.dataDir,
          DATABASE_URL: t.svc.ctx.config.databaseUrl!,
          CHAIN_RPC_URL: t.svc.rpcUrl,
          WORKERS: 'false',
          TRUST_PROXY: '127.0.0.1',
          LOG_LEVEL: 'silent',
          DEMO_APP: 'false',
          OPERATOR_AUTH_GLOBAL_FAILURES: String(GLOBAL_BUDGET),
        }),
      );
      try {
        const there = await fetch(`${second.url}/admin/v1/apps`, { headers: { authorization: `Bearer ${operator}`, 'x-forwarded-for': locked } });
        assert.equal(there.status, 429, 'the second process refuses the address the first locked');
      } finally {
        await second.stop();
      }
    });
  });
}
