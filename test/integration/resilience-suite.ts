// What a database administrator, an attacker and a retrying client found, against a real service, once
// per database: a database that cannot be used answers 503 database_unavailable with Retry-After;
// cursors, the console API and credentials refuse text neither database stores unchanged; amounts leave
// as exact decimal literals (answers and webhook payloads); failed operator-token attempts are limited
// per address everywhere the token is taken; names compared after NFC, invisible ones refused; the
// console's origin check trusts PUBLIC_URL, not Host; over-long bodies answered 413 to every client;
// a request line that is not UTF-8 refused with bad_url.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import type { ApiResponse } from '../helpers/env.js';
import { waitFor } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createReward } from '../../src/services/rewards/index.js';
import { createUser } from '../../src/services/users/users.js';
import { sqliteFile } from '../../src/store/sqlite/open.js';

const uid6 = () => Math.random().toString(36).slice(2, 8);
const cursorOf = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

function assertError(r: ApiResponse, status: number, code?: string): void {
  assert.equal(r.status, status, r.raw);
  assert.equal(r.body?.success, false, r.raw);
  const d = Array.isArray(r.body.error.detail) ? r.body.error.detail[0] : r.body.error.detail;
  if (code) assert.equal(d.code, code, r.raw);
}

/** A request over a socket of its own (Host and body as given; the whole body is written before the answer is read). */
function rawRequest(
  port: number,
  opts: { method: string; path: string; headers?: Record<string, string>; body?: Buffer },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: opts.method, path: opts.path, headers: opts.headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

export function resilienceSuite(db: 'sqlite' | 'postgres'): void {
  describe(`resilience (${db})`, () => {
    let t: TestService;
    let port: number;
    let operator: string;
    before(async () => {
      t = await startTestService(db);
      port = Number(new URL(t.svc.url).port);
      operator = t.svc.ctx.installation.operatorToken!;
    });
    after(async () => {
      await t?.stop();
    });
    const call = (url: string, method: string, body: unknown, token: string) =>
      fetch(url, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      }).then(async (r) => {
        const raw = await r.text();
        return { status: r.status, raw, body: raw ? JSON.parse(raw) : undefined, headers: r.headers } as ApiResponse;
      });
    const admin = (method: string, p: string, body?: unknown, token = operator) => call(`${t.svc.url}/admin/v1${p}`, method, body, token);
    const consoleApi = (method: string, p: string, body?: unknown) => call(`${t.svc.url}/console/api${p}`, method, body, operator);

    it('a database that cannot be used answers 503 database_unavailable with Retry-After, then recovers', { timeout: 60_000 }, async () => {
      const a = await t.newApp();
      if (db === 'sqlite') {
        // Another process holds the write lock past the wait (SQLITE_BUSY).
        const other = new SQLite(sqliteFile(t.svc.ctx.config.databaseUrl, t.dataDir));
        other.exec('begin immediate');
        try {
          const r = await a.api.post('/user', {});
          assertError(r, 503, 'database_unavailable');
          assert.equal(r.body.error.type, 'server_error');
          assert.equal(r.headers.get('retry-after'), '1');
        } finally {
          other.exec('rollback');
          other.close();
        }
      } else {
        // Every connection of the service ended under it, repeatedly, while requests run.
        const adminPg = new pg.Client({ connectionString: t.svc.ctx.config.databaseUrl });
        await adminPg.connect();
        const statuses: number[] = [];
        for (let round = 0; round < 3; round++) {
          const burst = Promise.all(
            Array.from({ length: 20 }, () =>
              a.api.post('/user', {}).then((r) => {
                statuses.push(r.status);
                if (r.status !== 201) {
                  assertError(r, 503, 'database_unavailable');
                  assert.equal(r.headers.get('retry-after'), '1');
                }
              }),
            ),
          );
          await adminPg.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
          await burst;
        }
        await adminPg.end();
        assert.ok(!statuses.includes(500), String(statuses));
      }
      const ok = await waitFor('a create succeeds again', async () => ((await a.api.post('/user', {})).status === 201 ? true : null), 20_000, 100);
      assert.equal(ok, true);
    });

    it('cursors: NUL or lone surrogates in what they decode to answer 400 on every list', async () => {
      const a = await t.newApp();
      const user = (await a.api.post('/user', {})).body.data.uid;
      for (const bad of [
        cursorOf(['2026-01-01T00:00:00.000Z', 'a\u0000b']),
        cursorOf(['\u0000', 'x']),
        Buffer.concat([Buffer.from('["2026'), Buffer.from([0xff]), Buffer.from('","x"]')]).toString('base64url'),
        cursorOf(['x\ud800', 'y']),
      ]) {
        for (const p of ['/asset', '/reward/allocation', '/reward/claim']) assertError(await a.api.get(`${p}?user_uid=${user}&cursor=${bad}`), 400, 'invalid');
        assertError(await admin('GET', `/apps/${a.uid}/users?cursor=${bad}`), 400, 'invalid');
        for (const p of [`/apps/${a.uid}/users?cursor=${bad}`, `/apps/${a.uid}/assets?cursor=${bad}`]) assertError(await consoleApi('GET', p), 400, 'invalid');
      }
    });

    it('the console API refuses NUL and lone surrogates, as the public API does', async () => {
      const a = await t.newApp();
      const before = (await t.svc.ctx.db.selectFrom('apps').select('uid').execute()).length;
      for (const name of ['a\u0000b', 'x\ud800']) {
        const r = await consoleApi('POST', '/apps', { name });
        assertError(r, 400);
        assert.equal(r.body.error.type, 'validation_error');
      }
      assert.equal((await t.svc.ctx.db.selectFrom('apps').select('uid').execute()).length, before);
      assertError(await consoleApi('GET', `/apps/${a.uid}/users?q=a%00b`), 400);
      assertError(await consoleApi('GET', `/apps/${a.uid}/assets?q=%ED%A0%80`), 400); // a surrogate encoded as UTF-8 bytes: not UTF-8
    });

    it('amounts leave as exact decimal literals: answers, balances and webhook payloads', { timeout: 90_000 }, async () => {
      const a = await t.newApp();
      const user = (await createUser(t.svc.ctx, a.uid, {})).uid;
      const { uid: reward } = await createReward(t.svc.ctx, a.uid, { name: 'Exact', token_name: 'Exact', token_symbol: 'EXA', supply: '100000000000000000' });
      const alloc = (amount: string) =>
        a.api.call('POST', '/reward/allocate', `{"reward_uid":"${reward}","to_user_uid":"${user}","amount":"${amount}","nonce":"${uid6()}"}`);
      const created = await alloc('1.000000000000000001');
      assert.equal(created.status, 201, created.raw);
      const r1 = await a.api.get(`/reward/allocation/${created.body.data.uid}`);
      assert.match(r1.raw, /"amount":1\.000000000000000001[,}]/);
      assert.equal(r1.body.data.amount, 1); // what JSON.parse reads, as before
      // The key order of the object is unchanged.
      assert.deepEqual(Object.keys(r1.body.data), ['uid', 'reward_uid', 'to_user_uid', 'amount', 'nonce', 'created_at', 'status']);
      const r2 = await alloc('2.700000000000000001');
      assert.equal(r2.status, 201, r2.raw);
      await waitFor(
        'allocations done',
        async () => {
          const rows = await t.svc.ctx.db.selectFrom('allocations').select('status').where('reward_uid', '=', reward).execute();
          return rows.length === 2 && rows.every((r) => r.status === 'done');
        },
        60_000,
        200,
      );
      const bal = await a.api.get(`/reward/balance?reward_uid=${reward}&user_uid=${user}`);
      assert.equal(bal.status, 200, bal.raw);
      assert.match(bal.raw, /"amount":3\.700000000000000002[,}]/);
      const got = await a.api.get(`/reward/allocation/${r1.body.data.uid}`);
      assert.match(got.raw, /"amount":1\.000000000000000001[,}]/);
      const payloads = await t.svc.ctx.db.selectFrom('events').select('payload').where('app_uid', '=', a.uid).where('type', '=', 'reward.allocated').execute();
      assert.equal(payloads.length, 2);
      assert.ok(
        payloads.some((p) => /"amount":1\.000000000000000001[,}]/.test(p.payload)),
        JSON.stringify(payloads),
      );
      const big = await alloc('9007199254740993');
      assert.match((await a.api.get(`/reward/allocation/${big.body.data.uid}`)).raw, /"amount":9007199254740993[,}]/);
    });

    it('unique_name: NFC and NFD spellings are one name (stored as given); invisible names are refused', async () => {
      const a = await t.newApp();
      const user = (await a.api.post('/user', {})).body.data.uid;
      const coll = await t.newCollection(a.uid);
      const create = (name: string) =>
        a.api.post('/asset', {
          user_uid: user,
          collection_uid: coll,
          asset_external_id: uid6(),
          data: { name, unique_name: true, image_url: 'https://example.com/n.png', store_image_on_ipfs: false },
        });
      const nfc = 'Caf\u00e9';
      const nfd = 'Cafe\u0301';
      const first = await create(nfd);
      assert.equal(first.status, 201, first.raw);
      assert.equal((await a.api.get(`/asset/${first.body.data.uid}`)).body.data.name, nfd, 'stored as given');
      assertError(await create(nfc), 400, 'asset_name_exists');
      for (const invisible of ['\u200b', '\u200b\u200d\ufeff', ' \u2060 ', '\u3164']) {
        const r = await create(invisible);
        assertError(r, 400);
        assert.equal(r.body.error.type, 'validation_error', r.raw);
      }
    });

    it('the console origin check compares with PUBLIC_URL, not Host', async () => {
      const fake = 'rebound.example:' + port;
      const rebound = await rawRequest(port, {
        method: 'POST',
        path: '/console/api/session',
        headers: { host: fake, origin: `http://${fake}`, 'content-type': 'application/json' },
        body: Buffer.from(JSON.stringify({ token: 'x'.repeat(20) })),
      });
      assert.equal(rebound.status, 403, rebound.body);
      assert.equal(JSON.parse(rebound.body).error.detail.code, 'cross_site_request');
      const own = await rawRequest(port, {
        method: 'POST',
        path: '/console/api/session',
        headers: { origin: new URL(t.svc.ctx.installation.publicUrl).origin, 'content-type': 'application/json' },
        body: Buffer.from(JSON.stringify({ token: operator })),
      });
      assert.equal(own.status, 200, own.body);
    });

    it('an over-long body is answered 413 in the envelope, also to a client that sends all of it first', async () => {
      const a = await t.newApp();
      const body = Buffer.alloc(3 * 1024 * 1024, 'a');
      for (let i = 0; i < 20; i++) {
        const r = await rawRequest(port, {
          method: 'POST',
          path: '/v1/user',
          headers: { 'x-api-key': a.apiKey, authorization: `Bearer ${a.api.token}`, 'content-type': 'application/json', 'content-length': String(body.length) },
          body,
        });
        assert.equal(r.status, 413, r.body);
        assert.equal(JSON.parse(r.body).error.detail.code, 'payload_too_large');
      }
      // Chunked: the limit is found while reading.
      const chunked = await rawRequest(port, {
        method: 'POST',
        path: '/v1/user',
        headers: { 'x-api-key': a.apiKey, authorization: `Bearer ${a.api.token}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        body,
      });
      assert.equal(chunked.status, 413, chunked.body);
    });

    it('a request line that is not UTF-8 answers 400 bad_url (query strings included)', async () => {
      const a = await t.newApp();
      for (const q of ['/asset?user_uid=%FF', '/user?user_uid=%C3', '/asset?cursor=%ED%A0%80', '/asset?x=%C0%AF'])
        assertError(await a.api.get(q), 400, 'bad_url');
      assert.equal((await a.api.get('/asset?user_uid=%C3%A9')).status, 200); // é
      // Raw bytes in the request line, not percent-encoded.
      const raw = await new Promise<string>((resolve, reject) => {
        const s = net.connect(port, '127.0.0.1', () => {
          s.write(
            Buffer.concat([
              Buffer.from('GET /v1/asset?user_uid='),
              Buffer.from([0xff, 0xfe]),
              Buffer.from(` HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${a.apiKey}\r\nAuthorization: Bearer ${a.api.token}\r\nConnection: close\r\n\r\n`),
            ]),
          );
        });
        let out = '';
        s.on('data', (c) => (out += c.toString('latin1')));
        s.on('end', () => resolve(out));
        s.on('error', reject);
      });
      assert.match(raw, /^HTTP\/1\.1 400 /);
      assert.match(raw, /"bad_url"/);
      // Without credentials under /v1: authentication comes first, as for a path that is not UTF-8.
      const anon = await fetch(`${t.svc.url}/v1/asset?user_uid=%FF`);
      assert.equal(anon.status, 401);
    });

    it('explorer and front-door pages carry a Content-Security-Policy that allows no script', async () => {
      for (const p of ['/explorer/address/0x0000000000000000000000000000000000000001', '/']) {
        const r = await fetch(`${t.svc.url}${p}`, { headers: { accept: 'text/html' } });
        assert.equal(r.status, 200, p);
        const csp = r.headers.get('content-security-policy') ?? '';
        assert.match(csp, /default-src 'none'/, p);
        assert.doesNotMatch(csp, /script-src|unsafe/, p);
        const style = /<style>(.*)<\/style>/s.exec(await r.text())![1];
        assert.ok(csp.includes(`'sha256-${createHash('sha256').update(style).digest('base64')}'`), "the page's own style is allowed by its hash");
      }
    });

    // Last: it leaves this address refused for the operator token.
    it('failed operator-token attempts are limited per address on /admin/v1 and console Bearer', async () => {
      let refused: ApiResponse | null = null;
      for (let i = 0; i < 12 && !refused; i++) {
        const r =
          i % 2 === 0
            ? await admin('GET', '/apps', undefined, `wrong-${i}-${'x'.repeat(20)}`)
            : await fetch(`${t.svc.url}/console/api/apps`, { headers: { authorization: `Bearer wrong-${i}` } }).then(
                async (x) => ({ status: x.status, raw: await x.text() }) as ApiResponse,
              );
        if (r.status === 429) refused = r;
        else assert.equal(r.status, 401, r.raw);
      }
      assert.ok(refused, 'refused after 10 failures');
      // From now on the right token is refused too from this address: guessing has stopped.
      const right = await admin('GET', '/apps');
      assertError(right, 429, 'too_many_attempts');
      const viaConsole = await fetch(`${t.svc.url}/console/api/apps`, { headers: { authorization: `Bearer ${operator}` } });
      assert.equal(viaConsole.status, 429);
    });
  });
}
