// Hardening against a real service (HTTP + workers + embedded anvil), once per database: request text
// both databases store unchanged, the envelope for every failure (Fastify's and Node's own included),
// rate limits shared through the database, Idempotency-Key, exact amount literals, emails compared
// case-insensitively, wire details, authentication before routing, DATA_DIR permissions.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { once } from 'node:events';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { ApiClient, freePort, freshPostgres, tempDir, waitFor, type ApiResponse } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { loadConfig, type Config } from '../../src/config/config.js';
import { startService, type Service } from '../../src/boot/service.js';
import { buildHttp } from '../../src/http/app.js';
import { STORABLE_TEXT_MESSAGE } from '../../src/http/kit/schemas.js';
import { createReward } from '../../src/services/rewards/index.js';
import { createUser, findUser } from '../../src/services/users/users.js';
import { dbCounterStore } from '../../src/services/requests/rate-limits.js';
import { openStore } from '../../src/store/open.js';
import { migrateTo, migrateToLatest } from '../../src/store/migrate.js';
import type { Ctx } from '../../src/services/context.js';

type TestApp = Awaited<ReturnType<TestService['newApp']>>;
const uid6 = () => Math.random().toString(36).slice(2, 8);
const RATE_LIMIT = 40;
const AUTH_FAILURES = 30;

/** The error envelope of the API, checked strictly. */
function assertEnvelope(r: ApiResponse, status: number, code?: string): void {
  assert.equal(r.status, status, r.raw);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(r.body?.success, false, r.raw);
  assert.deepEqual(Object.keys(r.body), ['success', 'error']);
  const { type, detail } = r.body.error;
  assert.equal(type, status >= 500 ? 'server_error' : r.body.error.type === 'validation_error' ? 'validation_error' : 'client_error');
  for (const d of Array.isArray(detail) ? detail : [detail]) {
    assert.equal(typeof d.code, 'string');
    assert.equal(typeof d.message, 'string');
    assert.equal(Object.keys(d).at(-1), 'message');
  }
  if (code) assert.equal((Array.isArray(detail) ? detail[0] : detail).code, code, r.raw);
}

const details = (r: ApiResponse): any[] => (Array.isArray(r.body.error.detail) ? r.body.error.detail : [r.body.error.detail]);

/**
 * Every route of a Fastify server with its methods, read from its printed route tree (Fastify has no
 * route list): a line is a path segment indented 4 characters per level, with its methods if a route
 * ends there.
 */
function routeTable(http: FastifyInstance): { path: string; methods: string[] }[] {
  const out: { path: string; methods: string[] }[] = [];
  const segments: string[] = [];
  for (const line of http.printRoutes().split('\n')) {
    const m = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z]+(?:, [A-Z]+)*)\))?$/.exec(line);
    if (!m) continue;
    segments.length = m[1].length / 4;
    segments.push(m[2]);
    if (m[3]) out.push({ path: segments.join(''), methods: m[3].split(', ') });
  }
  return out;
}

/** A raw HTTP exchange on one socket (what fetch will not send: pipelining, huge headers). */
function rawExchange(port: number, write: (s: net.Socket) => unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let out = '';
    s.on('data', (d) => (out += d));
    s.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve(out) : reject(err)));
    s.on('close', () => resolve(out));
    s.on('connect', () => void write(s));
  });
}

/** JSON-schema leaves that are strings (or unions admitting a string), as paths into a body. */
function stringLeaves(schema: any, at: string[] = []): { path: string[]; union: boolean }[] {
  if (!schema) return [];
  if (schema.anyOf || schema.oneOf) return (schema.anyOf ?? schema.oneOf).some((s: any) => s.type === 'string') ? [{ path: at, union: true }] : [];
  if (schema.type === 'string') return schema.enum ? [] : [{ path: at, union: false }]; // an enum refuses anything else anyway
  if (schema.type === 'object') return Object.entries(schema.properties ?? {}).flatMap(([k, v]) => stringLeaves(v, [...at, k]));
  if (schema.type === 'array') return stringLeaves(schema.items, [...at, '0']);
  return [];
}

/** A body holding `value` at `path` (array indexes as '0') and nothing else. */
function bodyWith(path: string[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  return head === '0' ? [bodyWith(rest, value)] : { [head]: bodyWith(rest, value) };
}

export function hardeningSuite(db: 'sqlite' | 'postgres'): void {
  describe(`hardening on ${db}`, () => {
    // On PostgreSQL the service trusts the loopback "proxy", so X-Forwarded-For counts; on SQLite it
    // trusts nobody, so a forged one is ignored. Both behaviours are tested below.
    const trusted = db === 'postgres';
    // Wrong operator tokens are sent on purpose (every management route refuses them): not limited here.
    const env = {
      RATE_LIMIT: String(RATE_LIMIT),
      RATE_LIMIT_AUTH_FAILURES: String(AUTH_FAILURES),
      OPERATOR_AUTH_FAILURES: '0',
      CHAIN_NAME: 'Amoy',
      ...(trusted ? { TRUST_PROXY: '127.0.0.1' } : {}),
    };
    let t: TestService;
    let app: TestApp;
    let collection: string;
    let operator: string;
    let admin: ApiClient;

    before(async () => {
      t = await startTestService(db, env);
      app = await t.newApp();
      collection = await t.newCollection(app.uid, true);
      operator = t.svc.ctx.installation.operatorToken!;
      admin = new ApiClient(`${t.svc.url}/admin/v1`, undefined, operator);
    });
    after(async () => {
      await t?.stop();
    });

    const counts = async () => {
      const tables = ['users', 'assets', 'transfers', 'burns', 'allocations', 'claims', 'rewards', 'collections', 'apps', 'idempotency_keys'] as const;
      const out: Record<string, number> = {};
      for (const tb of tables)
        out[tb] = Number(
          (
            await t.svc.ctx.db
              .selectFrom(tb)
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      return out;
    };
    const assetBody = (user_uid: string, collection_uid = collection) => ({
      user_uid,
      collection_uid,
      asset_external_id: `ext-${uid6()}`,
      data: { name: `Gem ${uid6()}`, unique_name: false, image_url: 'https://example.com/gem.png', store_image_on_ipfs: false },
    });
    /** A fresh App with a deployed collection of its own (every App has its own rate limit). */
    async function appWithCollection(): Promise<{ a: TestApp; coll: string }> {
      const a = await t.newApp();
      return { a, coll: await t.newCollection(a.uid, true) };
    }
    async function mintedAsset(a: TestApp, coll: string): Promise<{ uid: string; user: string }> {
      const user = (await a.api.post('/user', {})).body.data.uid as string;
      const uid = (await a.api.post('/asset', assetBody(user, coll))).body.data.uid as string;
      await waitFor(
        'minted',
        async () => (await t.svc.ctx.db.selectFrom('assets').select('mint_status').where('uid', '=', uid).executeTakeFirstOrThrow()).mint_status === 'minted',
        20_000,
      );
      return { uid, user };
    }

    describe('request text both databases store unchanged', () => {
      it('every string of every route (OpenAPI document) refuses NUL and lone surrogates: 400 validation_error naming the field', async () => {
        const doc = await (await fetch(`${t.svc.url}/openapi.json`)).json();
        const before = await counts();
        let checked = 0;
        for (const [template, ops] of Object.entries<any>(doc.paths)) {
          const isAdmin = template.startsWith('/admin/v1');
          if (!isAdmin && !template.startsWith('/v1')) continue;
          for (const [method, op] of Object.entries<any>(ops)) {
            const client = isAdmin ? admin : (await t.newApp()).api; // a fresh App: its rate limit is its own
            const base = isAdmin ? `${t.svc.url}/admin/v1` : t.base;
            const params: any[] = op.parameters ?? [];
            const url = (pathValues: Record<string, string>, query: Record<string, string> = {}) => {
              const p = template
                .replace(/^\/(admin\/)?v1/, '')
                .replace(/\{(\w+)\}/g, (_: string, n: string) => encodeURIComponent(pathValues[n] ?? '123456789012'));
              const q = new URLSearchParams(query).toString();
              return q ? `${p}?${q}` : p;
            };
            const send = (p: string, body?: unknown) => new ApiClient(base, client.apiKey, client.token).call(method.toUpperCase(), p, body);
            const expectNamed = (r: ApiResponse, field: string, union = false) => {
              assertEnvelope(r, 400);
              assert.equal(r.body.error.type, 'validation_error', `${method} ${template} ${field}: ${r.raw}`);
              const d = details(r).find((x) => x.field_name === field);
              assert.ok(d, `${method} ${template}: no detail names ${field}: ${r.raw}`);
              if (!union) assert.equal(d.message, STORABLE_TEXT_MESSAGE, `${method} ${template} ${field}`);
              checked++;
            };
            for (const prm of params.filter((x) => x.schema?.type === 'string' && !x.schema.enum)) {
              const r = prm.in === 'path' ? await send(url({ [prm.name]: 'a\u0000b' })) : await send(url({}, { [prm.name]: 'a\u0000b' }));
              expectNamed(r, prm.name);
            }
            const schema = op.requestBody?.content?.['application/json']?.schema;
            for (const leaf of stringLeaves(schema)) {
              for (const bad of ['a\u0000b', 'x\ud800', '\udc00y']) {
                expectNamed(await send(url({}), bodyWith(leaf.path, bad)), leaf.path.join('.'), leaf.union);
              }
            }
          }
        }
        assert.ok(checked > 100, `${checked} fields checked`);
        assert.deepEqual({ ...(await counts()), apps: 0 }, { ...before, apps: 0 }, 'nothing was written (but the Apps this test made)');
      });

      it('a valid astral character (a surrogate pair) is stored and answered unchanged', async () => {
        const ext = `sword-🗡-${uid6()}`;
        const r = await app.api.post('/user', { user_external_id: ext });
        assert.equal(r.status, 201, r.raw);
        assert.equal((await app.api.get(`/user?user_external_id=${encodeURIComponent(ext)}`)).body.data.user_external_id, ext);
      });
    });

    describe('the error envelope for every failure', () => {
      it('a URL that is not percent-encoded UTF-8: 400 in the envelope (401 first without credentials)', async () => {
        const a = await t.newApp();
        for (const p of ['/user/%ff%fe', '/user/%ED%A0%80', '/asset/%c3']) {
          const r = await a.api.get(p);
          assertEnvelope(r, 400, 'bad_url');
          assert.equal(r.headers.get('x-ratelimit-limit'), String(RATE_LIMIT), 'rate-limit headers on every /v1 answer');
          assertEnvelope(await new ApiClient(t.base).get(p), 401, 'unauthorized');
        }
      });

      it('an over-long path segment (a 5,000-character uid): 414 in the envelope', async () => {
        const a = await t.newApp();
        const r = await a.api.get(`/user/${'1'.repeat(5000)}`);
        assertEnvelope(r, 414, 'uri_too_long');
        assert.ok(r.headers.get('x-ratelimit-remaining'));
        assertEnvelope(await new ApiClient(t.base).get(`/asset/${'1'.repeat(5000)}`), 401);
      });

      it('headers over the size limit: 431 in the envelope, straight from the HTTP parser', async () => {
        const port = Number(new URL(t.svc.url).port);
        const raw = await rawExchange(port, (s) => s.write(`GET /v1/user/1 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
        const [head, body] = raw.split('\r\n\r\n');
        assert.match(head, /^HTTP\/1\.1 431 /);
        assert.match(head, /content-type: application\/json/i);
        assert.deepEqual(JSON.parse(body), {
          success: false,
          error: { type: 'client_error', detail: { code: 'request_header_fields_too_large', message: 'Request headers are too large.' } },
        });
        const garbage = await rawExchange(port, (s) => s.write('NOT HTTP AT ALL\r\n\r\n'));
        assert.match(garbage, /^HTTP\/1\.1 400 /);
        assert.equal(JSON.parse(garbage.split('\r\n\r\n')[1]).error.detail.code, 'bad_request');
      });

      it('unknown routes: 404 Not Found, after authentication under /v1 and /admin/v1', async () => {
        const a = await t.newApp();
        const r = await a.api.get('/no/such/route');
        assertEnvelope(r, 404, 'not_found');
        assert.equal(r.body.error.detail.message, 'Not Found');
        assert.ok(r.headers.get('x-ratelimit-reset'));
        assertEnvelope(await new ApiClient(t.base).get('/no/such/route'), 401);
        assertEnvelope(await new ApiClient(t.base).call('DELETE', '/user/123456789012'), 401);
        assertEnvelope(await a.api.call('DELETE', '/user/123456789012'), 404);
        // management API: without the operator token nothing is revealed, not even what exists
        for (const p of ['/apps', '/nope', '/apps/1/nope', '/apps/%ff'])
          assertEnvelope(await new ApiClient(`${t.svc.url}/admin/v1`).get(p), 401, 'unauthorized');
        assertEnvelope(await admin.get('/nope'), 404, 'not_found');
        assertEnvelope(await admin.get('/apps/%ff'), 400, 'bad_url');
        assertEnvelope(await new ApiClient(t.svc.url).get('/nope'), 404, 'not_found');
      });

      it("every route in the management API's route table refuses a request without the operator token: 401", async () => {
        const routes = routeTable(t.svc.http!).filter((r) => r.path.startsWith('/admin/v1/'));
        // The server's own table: the management routes of every route file are in it.
        for (const p of [
          '/admin/v1/apps',
          '/admin/v1/apps/:uid/users',
          '/admin/v1/apps/:uid/webhook/events/:id/redeliver',
          '/admin/v1/apps/:uid/rewards/:reward/withdraw',
        ]) {
          assert.ok(
            routes.some((r) => r.path === p),
            `${p} is in the route table`,
          );
        }
        let checked = 0;
        for (const r of routes) {
          const url = t.svc.url + r.path.replace(/:\w+/g, '100000000001').replace(/\*$/, 'x');
          for (const method of r.methods) {
            const body = method === 'POST' || method === 'PUT' || method === 'PATCH' ? '{}' : undefined;
            for (const auth of [undefined, 'Bearer not-the-operator-token', `Bearer ${app.api.token}`]) {
              const headers: Record<string, string> = {
                'x-api-key': app.apiKey,
                ...(body ? { 'content-type': 'application/json' } : {}),
                ...(auth ? { authorization: auth } : {}),
              };
              const res = await fetch(url, { method, headers, body });
              const raw = await res.text();
              if (method === 'HEAD') assert.equal(res.status, 401, `${method} ${r.path}`);
              else assertEnvelope({ status: res.status, body: JSON.parse(raw), raw, headers: res.headers }, 401, 'unauthorized');
              checked++;
            }
          }
        }
        assert.ok(checked >= 3 * 20, `${checked} requests`);
      });

      it('bodies: not JSON 415, malformed 400, not UTF-8 400, an array where an object goes 400', async () => {
        const a = await t.newApp();
        assertEnvelope(await a.api.call('POST', '/user', 'x', { 'Content-Type': 'text/plain' }), 415, 'unsupported_media_type');
        assertEnvelope(await a.api.call('POST', '/user', '{"email":'), 400, 'invalid_json');
        assertEnvelope(await a.api.call('POST', '/user', '[1,2]'), 400);
        const r = await fetch(`${t.base}/user`, {
          method: 'POST',
          headers: { 'X-API-KEY': a.apiKey, Authorization: `Bearer ${a.api.token}`, 'Content-Type': 'application/json' },
          body: Buffer.from([0x7b, 0x22, 0x65, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]),
        });
        const raw = await r.text();
        assertEnvelope({ status: r.status, body: JSON.parse(raw), raw, headers: r.headers }, 400, 'invalid_json');
      });

      it('a request while the server is closing: 503 in the envelope with Connection: close', async () => {
        // A second HTTP front on the same context, so the suite's own keeps serving.
        const http = await buildHttp({ ctx: t.svc.ctx, logger: t.svc.ctx.log, health: async () => ({ ready: true }) });
        await http.listen({ port: 0, host: '127.0.0.1' });
        const port = (http.server.address() as net.AddressInfo).port;
        const a = await t.newApp();
        const req = `GET /v1/user/123456789012 HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${a.apiKey}\r\nAuthorization: Bearer ${a.api.token}\r\n`;
        let closed: Promise<void> | null = null;
        const routed = once(http.server, 'request');
        const raw = await rawExchange(port, async (s) => {
          // The first request is in flight (its body not complete) when closing starts; the second,
          // pipelined behind it on the same connection, arrives while closing.
          s.write(
            `POST /v1/user HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${a.apiKey}\r\nAuthorization: Bearer ${a.api.token}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{`,
          );
          await routed;
          closed = http.close();
          await new Promise((r) => setImmediate(r));
          s.write(`}${req}\r\n`);
        });
        await closed;
        const answers = raw.split(/(?=HTTP\/1\.1 )/);
        assert.match(answers[0], /^HTTP\/1\.1 201 /);
        assert.match(answers[1], /^HTTP\/1\.1 503 /);
        assert.match(answers[1], /connection: close/i);
        assert.deepEqual(JSON.parse(answers[1].split('\r\n\r\n')[1]).error.detail.code, 'unavailable');
      });
    });

    describe('rate limits (RATE_LIMIT per API key, shared through the database)', () => {
      /** A fixed window must not turn over in the middle of a test: start in a fresh one if it is late. */
      async function freshWindow(a: TestApp): Promise<void> {
        const reset = Number((await a.api.get('/user/123456789012')).headers.get('x-ratelimit-reset'));
        const left = reset * 1000 - Date.now();
        if (left < 8_000) await new Promise((r) => setTimeout(r, left + 50)); // a clock boundary: no event to await
      }

      it("every /v1 answer carries the key's budget; over it: 429 in the envelope with retry-after; another App is not affected", async () => {
        const [a, b] = await Promise.all([t.newApp(), t.newApp()]);
        await freshWindow(a);
        const first = await a.api.post('/user', {});
        const used0 = RATE_LIMIT - Number(first.headers.get('x-ratelimit-remaining'));
        assert.equal(first.headers.get('x-ratelimit-limit'), String(RATE_LIMIT));
        const reset = Number(first.headers.get('x-ratelimit-reset'));
        assert.ok(reset * 1000 > Date.now() && reset * 1000 <= Date.now() + 60_000, `reset ${reset} within the minute`);
        const answers: ApiResponse[] = [];
        for (let i = used0; i < RATE_LIMIT; i++) answers.push(await a.api.get(i % 2 ? '/user/123456789012' : '/nope'));
        answers.forEach((r, i) => assert.equal(Number(r.headers.get('x-ratelimit-remaining')), RATE_LIMIT - used0 - i - 1, `answer ${i}`));
        const over = await a.api.post('/user', {});
        assertEnvelope(over, 429, 'rate_limited');
        assert.equal(over.headers.get('x-ratelimit-remaining'), '0');
        const retry = Number(over.headers.get('retry-after'));
        assert.ok(retry >= 1 && retry <= 60, `retry-after ${retry}`);
        // the other App, meanwhile
        const rb = await b.api.post('/user', {});
        assert.equal(rb.status, 201);
        assert.ok(Number(rb.headers.get('x-ratelimit-remaining')) >= RATE_LIMIT - 2);
        // the refused request did nothing, and the count reached the shared table
        await waitFor(
          'counter flushed',
          async () =>
            (await t.svc.ctx.db.selectFrom('rate_limits').select('hits').where('bucket', '=', `key:${a.apiKey}`).executeTakeFirst())?.hits === RATE_LIMIT,
          5000,
          20,
        );
      });

      it('the database counter: one atomic upsert per flush; a new window restarts, a late increment for an old one is ignored', async () => {
        const store = dbCounterStore(t.svc.ctx);
        const b = `test:${uid6()}`;
        const c = `test:${uid6()}`;
        assert.deepEqual(
          await store.add([
            { bucket: b, window: 100, n: 3 },
            { bucket: c, window: 100, n: 1 },
          ]),
          [
            { bucket: b, window: 100, hits: 3 },
            { bucket: c, window: 100, hits: 1 },
          ],
        );
        assert.deepEqual(await store.add([{ bucket: b, window: 100, n: 2 }]), [{ bucket: b, window: 100, hits: 5 }]);
        assert.deepEqual(await store.add([{ bucket: b, window: 101, n: 1 }]), [{ bucket: b, window: 101, hits: 1 }]);
        assert.deepEqual(await store.add([{ bucket: b, window: 100, n: 7 }]), [{ bucket: b, window: 101, hits: 1 }]);
        // concurrent flushes of the same bucket lose nothing
        await Promise.all(Array.from({ length: 10 }, () => store.add([{ bucket: c, window: 100, n: 1 }])));
        assert.equal((await t.svc.ctx.db.selectFrom('rate_limits').select('hits').where('bucket', '=', c).executeTakeFirstOrThrow()).hits, 11);
        await store.sweep(101);
        assert.equal((await t.svc.ctx.db.selectFrom('rate_limits').select('bucket').where('bucket', 'in', [b, c]).execute()).length, 1);
      });

      it('RATE_LIMIT=0 disables the limit and its headers', async () => {
        const http = await buildHttp({
          ctx: { ...t.svc.ctx, config: { ...t.svc.ctx.config, rateLimit: 0, authFailureLimit: 0 } },
          logger: t.svc.ctx.log,
          health: async () => ({ ready: true }),
        });
        await http.listen({ port: 0, host: '127.0.0.1' });
        try {
          const a = await t.newApp();
          const client = new ApiClient(`http://127.0.0.1:${(http.server.address() as net.AddressInfo).port}/v1`, a.apiKey, a.api.token);
          for (let i = 0; i < RATE_LIMIT + 5; i++) assert.equal((await client.get('/user/123456789012')).status, 404);
          assert.equal((await client.get('/user/123456789012')).headers.get('x-ratelimit-limit'), null);
        } finally {
          await http.close();
        }
      });
    });

    describe('Idempotency-Key on POST and PUT', () => {
      const withKey = (a: TestApp, method: string, p: string, body: unknown, key: string) => a.api.call(method, p, body, { 'Idempotency-Key': key });

      it('same key, same body: the first answer again (status and body); another body: 422; keys are per App', async () => {
        const [a, b] = await Promise.all([t.newApp(), t.newApp()]);
        const key = `k-${uid6()}`;
        const before = await counts();
        const first = await withKey(a, 'POST', '/user', { email: `idem-${uid6()}@example.com` }, key);
        assert.equal(first.status, 201);
        assert.equal(first.headers.get('idempotent-replayed'), null);
        const again = await withKey(a, 'POST', '/user', { email: `other-${uid6()}@example.com` }, key);
        assertEnvelope(again, 422, 'idempotency_key_reused');
        assert.equal(details(again)[0].field_name, 'Idempotency-Key');
        const sameBody = JSON.stringify({ email: `idem-x@example.com` });
        const k2 = `k-${uid6()}`;
        const r1 = await a.api.call('POST', '/user', sameBody, { 'Idempotency-Key': k2 });
        const r2 = await a.api.call('POST', '/user', sameBody, { 'Idempotency-Key': k2 });
        assert.equal(r1.status, 201);
        assert.equal(r2.status, 201);
        assert.equal(r2.raw, r1.raw, 'byte for byte');
        assert.equal(r2.headers.get('idempotent-replayed'), 'true');
        // the same key in another App is another key
        const rb = await b.api.call('POST', '/user', sameBody, { 'Idempotency-Key': k2 });
        assert.equal(rb.status, 201);
        assert.notEqual(rb.body.data.uid, r1.body.data.uid);
        const after = await counts();
        assert.equal(after.users - before.users, 3);
        assert.equal(after.idempotency_keys - before.idempotency_keys, 3);
      });

      it('POST /asset (grouped writes): concurrent duplicates create one asset; replays answer its uid; a burst of distinct keys replays exactly', async () => {
        const { a, coll } = await appWithCollection();
        const user = (await a.api.post('/user', {})).body.data.uid;
        const body = JSON.stringify(assetBody(user, coll));
        const key = `asset-${uid6()}`;
        const before = await counts();
        const answers = await Promise.all(Array.from({ length: 6 }, () => a.api.call('POST', '/asset', body, { 'Idempotency-Key': key })));
        const created = answers.filter((r) => r.status === 201);
        assert.ok(created.length >= 1);
        for (const r of answers.filter((x) => x.status !== 201)) assertEnvelope(r, 409, 'idempotency_key_in_use');
        assert.equal(new Set(created.map((r) => r.body.data.uid)).size, 1, 'one uid for every 201');
        const replay = await a.api.call('POST', '/asset', body, { 'Idempotency-Key': key });
        assert.equal(replay.status, 201);
        assert.equal(replay.body.data.uid, created[0].body.data.uid);
        assert.equal((await counts()).assets - before.assets, 1);

        const bodies = Array.from({ length: 12 }, () => JSON.stringify(assetBody(user, coll)));
        const keys = bodies.map(() => `burst-${uid6()}`);
        const firstRound = await Promise.all(bodies.map((bd, i) => a.api.call('POST', '/asset', bd, { 'Idempotency-Key': keys[i] })));
        const secondRound = await Promise.all(bodies.map((bd, i) => a.api.call('POST', '/asset', bd, { 'Idempotency-Key': keys[i] })));
        firstRound.forEach((r, i) => {
          assert.equal(r.status, 201, r.raw);
          assert.equal(secondRound[i].raw, r.raw);
        });
        assert.equal((await counts()).assets - before.assets, 13);
      });

      it('a failed request stores nothing (the retry runs again); PUT, transfer and allocate replay their first answer', async () => {
        const { a, coll } = await appWithCollection();
        const { uid: asset, user } = await mintedAsset(a, coll);
        const key = `x-${uid6()}`;
        const before = await counts();
        assertEnvelope(
          await withKey(
            a,
            'POST',
            '/transfer',
            { asset_uid: asset, from_user_uid: '999999999999', to_address: privateKeyToAddress(generatePrivateKey()) },
            key,
          ),
          404,
        );
        assert.equal((await counts()).idempotency_keys, before.idempotency_keys, 'a failure is not stored');

        const edit = { data: { name: `Edited ${uid6()}`, unique_name: false, image_url: 'https://example.com/e.png' } };
        const e1 = await withKey(a, 'PUT', `/asset/${asset}`, edit, key);
        assert.equal(e1.status, 200, e1.raw);
        assert.deepEqual(e1.body, { success: true, data: null });
        const e2 = await withKey(a, 'PUT', `/asset/${asset}`, edit, key);
        assert.equal(e2.status, 200);
        assert.equal(e2.headers.get('idempotent-replayed'), 'true');
        const edits = await t.svc.ctx.db.selectFrom('jobs').select('id').where('kind', '=', 'asset.edit').where('ref', '=', asset).execute();
        assert.equal(edits.length, 1, 'one edit, not two');
        assertEnvelope(await withKey(a, 'PUT', `/asset/${'1'.repeat(12)}`, edit, key), 422, 'idempotency_key_reused');

        await waitFor('edit done', async () => !(await a.api.get(`/asset/${asset}`)).body.data.is_editing, 20_000);
        const to = privateKeyToAddress(generatePrivateKey());
        const tk = `t-${uid6()}`;
        const tr1 = await withKey(a, 'POST', '/transfer', { asset_uid: asset, from_user_uid: user, to_address: to }, tk);
        assert.equal(tr1.status, 201, tr1.raw);
        const tr2 = await withKey(a, 'POST', '/transfer', { asset_uid: asset, from_user_uid: user, to_address: to }, tk);
        assert.equal(tr2.raw, tr1.raw);
        // without the key the same request is a new one, refused as the asset is already transferring
        assert.equal((await a.api.post('/transfer', { asset_uid: asset, from_user_uid: user, to_address: to })).status, 400);

        const { uid: reward } = await createReward(t.svc.ctx, a.uid, { name: 'Idem', token_name: 'Idem', token_symbol: 'IDM', supply: '1000' });
        const ak = `a-${uid6()}`;
        const al = { reward_uid: reward, to_user_uid: user, amount: 1.25, nonce: `n-${uid6()}` };
        const a1 = await withKey(a, 'POST', '/reward/allocate', al, ak);
        assert.equal(a1.status, 201, a1.raw);
        assert.equal((await withKey(a, 'POST', '/reward/allocate', al, ak)).raw, a1.raw);
        assert.equal((await t.svc.ctx.db.selectFrom('allocations').select('uid').where('reward_uid', '=', reward).execute()).length, 1);
      });

      it('an answer older than 24 h is not replayed; the key runs afresh. Bad keys: 400; GET ignores the header', async () => {
        const a = await t.newApp();
        const key = `old-${uid6()}`;
        const r1 = await withKey(a, 'POST', '/user', {}, key);
        await t.svc.ctx.db
          .updateTable('idempotency_keys')
          .set({ created_at_ms: Date.now() - 25 * 3600_000 })
          .where('app_uid', '=', a.uid)
          .where('idem_key', '=', key)
          .execute();
        const r2 = await withKey(a, 'POST', '/user', { user_external_id: 'different' }, key);
        assert.equal(r2.status, 201);
        assert.notEqual(r2.body.data.uid, r1.body.data.uid);
        assert.equal((await withKey(a, 'POST', '/user', { user_external_id: 'different' }, key)).raw, r2.raw, 'the new answer is the one kept');
        for (const bad of ['', 'a\tb', 'é', 'x'.repeat(256)]) {
          const r = await a.api.call('POST', '/user', {}, { 'Idempotency-Key': bad });
          assertEnvelope(r, 400);
          assert.equal(details(r)[0].field_name, 'Idempotency-Key', JSON.stringify(bad));
        }
        assert.equal((await a.api.call('GET', `/user/${r2.body.data.uid}`, undefined, { 'Idempotency-Key': 'é' })).status, 200);
      });
    });

    describe('exact amount literals', () => {
      it('JSON number literals are read exactly: the 19th decimal is refused, 9007199254740993 stays exact', async () => {
        const a = await t.newApp();
        const user = (await a.api.post('/user', {})).body.data.uid;
        const { uid: reward } = await createReward(t.svc.ctx, a.uid, { name: 'Exact', token_name: 'Exact', token_symbol: 'EXA', supply: '100000000000000000' });
        const raw = (amount: string, nonce = uid6()) =>
          a.api.call('POST', '/reward/allocate', `{"reward_uid":"${reward}","to_user_uid":"${user}","amount":${amount},"nonce":"${nonce}"}`);
        const before = await counts();
        for (const lit of ['1.0000000000000000001', '0.0000000000000000001', '1e-19']) {
          const r = await raw(lit);
          assertEnvelope(r, 400);
          assert.equal(r.body.error.type, 'validation_error');
          assert.deepEqual(
            details(r).map((d) => [d.field_name, d.message]),
            [['amount', 'Amount has more than 18 decimal places.']],
            lit,
          );
        }
        assert.equal((await counts()).allocations, before.allocations);
        const exact = async (lit: string, units: string) => {
          const r = await raw(lit);
          assert.equal(r.status, 201, r.raw);
          const row = await t.svc.ctx.db.selectFrom('allocations').select('amount').where('uid', '=', r.body.data.uid).executeTakeFirstOrThrow();
          assert.equal(row.amount, units, lit);
        };
        await exact('9007199254740993', '9007199254740993000000000000000000');
        await exact('0.000000000000000001', '1');
        await exact('1.000000000000000001', '1000000000000000001');
        await exact('123456789.123456789123456789', '123456789123456789123456789');
        await exact('2.5000000000000000000000', '2500000000000000000');
        // the management API's supply too
        const sup = await admin.call('POST', `/apps/${a.uid}/rewards`, '{"name":"S","token_name":"S","token_symbol":"S","supply":1.0000000000000000001}');
        assertEnvelope(sup, 400);
        assert.equal(details(sup)[0].field_name, 'supply');
      });
    });

    describe('emails: unique and looked up case-insensitively, stored as given', () => {
      it('in the API; external ids stay case-sensitive', async () => {
        const a = await t.newApp();
        const email = `Mixed.Case-${uid6()}@Example.COM`;
        const u = await a.api.post('/user', { email });
        assert.equal(u.status, 201);
        assert.equal((await a.api.get(`/user/${u.body.data.uid}`)).body.data.email, email, 'stored as given');
        for (const variant of [email.toLowerCase(), email.toUpperCase()]) {
          const dup = await a.api.post('/user', { email: variant });
          assertEnvelope(dup, 400, 'user_exists');
          assert.equal(dup.body.error.detail.message, 'User already exists.');
          assert.equal((await a.api.get(`/user?email=${encodeURIComponent(variant)}`)).body.data.uid, u.body.data.uid);
        }
        const ext = `Ext-${uid6()}`;
        const e1 = await a.api.post('/user', { user_external_id: ext });
        const e2 = await a.api.post('/user', { user_external_id: ext.toLowerCase() });
        assert.equal(e1.status, 201);
        assert.equal(e2.status, 201, 'another external id');
        assert.equal((await a.api.get(`/user?user_external_id=${ext}`)).body.data.uid, e1.body.data.uid);
        assert.equal((await a.api.get(`/user?user_external_id=${ext.toUpperCase()}`)).body.data, null);
      });

      it('migration 008 keeps working when existing users differ only by the case of their email', async () => {
        const pgdb = db === 'postgres' ? await freshPostgres() : null;
        const dir = tempDir();
        const store = openStore({ databaseUrl: pgdb?.url, dataDir: dir });
        try {
          await migrateTo(store, '007_tx_replacement');
          const d = store.db;
          await d
            .insertInto('apps')
            .values({ uid: '100000000001', name: 'Old', environment: 'development', created_at: '2024-01-01T00:00:00.000000Z' })
            .execute();
          const user = (uid: string, email: string | null, at: string) => ({
            uid,
            app_uid: '100000000001',
            email,
            user_external_id: null,
            wallet_address: null,
            wallet_created_at: null,
            created_at: at,
          });
          await d
            .insertInto('users')
            .values([
              user('200000000002', 'bob@example.com', '2024-01-02T00:00:00.000000Z'),
              user('200000000001', 'Bob@Example.com', '2024-01-01T00:00:00.000000Z'), // the oldest: it keeps the email's key
              user('200000000003', 'BOB@EXAMPLE.COM', '2024-01-03T00:00:00.000000Z'),
              user('200000000004', 'carol@example.com', '2024-01-04T00:00:00.000000Z'),
              user('200000000005', null, '2024-01-05T00:00:00.000000Z'),
            ] as any)
            .execute();
          assert.equal((await migrateToLatest(store))[0], '008_hardening', 'the next migration after 007');
          const keys = await d.selectFrom('users').select(['uid', 'email', 'email_key']).orderBy('uid').execute();
          assert.deepEqual(
            keys.map((k) => [k.uid, k.email, k.email_key]),
            [
              ['200000000001', 'Bob@Example.com', 'bob@example.com'],
              ['200000000002', 'bob@example.com', null],
              ['200000000003', 'BOB@EXAMPLE.COM', null],
              ['200000000004', 'carol@example.com', 'carol@example.com'],
              ['200000000005', null, null],
            ],
          );
          const ctx: Ctx = { ...t.svc.ctx, db: d };
          // an exact spelling finds its own user; any other spelling the oldest
          assert.equal((await findUser(ctx, '100000000001', 'email', 'bob@example.com'))!.uid, '200000000002');
          assert.equal((await findUser(ctx, '100000000001', 'email', 'BOB@EXAMPLE.COM'))!.uid, '200000000003');
          assert.equal((await findUser(ctx, '100000000001', 'email', 'bOb@example.com'))!.uid, '200000000001');
          assert.equal((await findUser(ctx, '100000000001', 'email', 'CAROL@example.com'))!.uid, '200000000004');
          // and no spelling of a taken email can be created again
          for (const e of ['bOB@example.com', 'bob@example.com', 'Carol@Example.com']) {
            await assert.rejects(createUser(ctx, '100000000001', { email: e }), /User already exists/);
          }
          assert.match((await createUser(ctx, '100000000001', { email: 'Dave@example.com' })).uid, /^\d{12}$/);
        } finally {
          await store.close();
          await pgdb?.drop();
          fs.rmSync(dir, { recursive: true, force: true });
        }
      });
    });

    describe('wire details', () => {
      it('network is the configured chain name as given; addresses answer in lower case; inputs in any case', async () => {
        const c = (await app.api.get(`/collection/${collection}`)).body.data;
        assert.equal(c.network, 'Amoy');
        assert.equal(c.chain, 'Amoy');
        assert.equal(c.contract_address, c.contract_address.toLowerCase());
        assert.match(c.explorer_url, /\/address\/0x[0-9a-f]{40}$/);
        const user = (await app.api.post('/user', {})).body.data.uid;
        const dep = (await app.api.get(`/deposit?user_uid=${user}&collection_uid=${collection}`)).body.data;
        assert.equal(dep.network, 'Amoy');
        assert.match(dep.wallet_address, /^0x[0-9a-f]{40}$/);
        assert.equal(dep.qr_code_data, `ethereum:${dep.wallet_address}@31337`);
        const w = (await app.api.get(`/user/${user}`)).body.data.wallets[0];
        assert.deepEqual([w.network, w.address], ['Amoy', dep.wallet_address]);
        const { uid: reward } = await createReward(t.svc.ctx, app.uid, { name: 'Wire', token_name: 'Wire', token_symbol: 'WIR', supply: '10' });
        const rw = (await app.api.get(`/reward/${reward}`)).body.data;
        assert.equal(rw.network, 'Amoy');
        assert.match(rw.withdraw_receiver, /^0x[0-9a-f]{40}$/);
        // mixed case that is no EIP-55 checksum: accepted, answered in lower case
        const hex = privateKeyToAddress(generatePrivateKey()).slice(2).toLowerCase();
        const mixed = `0x${[...hex].map((ch, i) => (i % 2 ? ch.toUpperCase() : ch)).join('')}`;
        const claim = await app.api.post('/reward/claim', { reward_uid: reward, from_user_uid: user, to_address: mixed });
        assert.equal(claim.status, 201, claim.raw);
        assert.equal((await app.api.get(`/reward/claim/${claim.body.data.uid}`)).body.data.to_address, `0x${hex}`);
      });
    });

    if (trusted) {
      describe('two API processes on one PostgreSQL database', () => {
        let second: Service;
        before(async () => {
          const cfg: Config = loadConfig({
            ...env,
            PORT: String(await freePort()),
            DATA_DIR: tempDir(),
            DATABASE_URL: t.svc.ctx.config.databaseUrl!,
            CHAIN_RPC_URL: t.svc.chain!.rpcUrl,
            MASTER_KEY: fs.readFileSync(path.join(t.dataDir, 'master.key'), 'utf8').trim(),
            // One installation: every process agrees on its public URL and operator token.
            PUBLIC_URL: t.svc.ctx.installation.publicUrl,
            OPERATOR_TOKEN: t.svc.ctx.installation.operatorToken!,
            WORKERS: 'false',
            DEMO_APP: 'false',
            LOG_LEVEL: 'silent',
          });
          second = await startService(cfg);
        });
        after(async () => {
          await second?.stop();
        });

        it('share one rate limit per API key (within the flush tolerance) and one set of idempotency answers', async () => {
          const a = await t.newApp();
          const on2 = new ApiClient(`${second.url}/v1`, a.apiKey, a.api.token);
          const bucket = `key:${a.apiKey}`;
          const hits = async () => (await t.svc.ctx.db.selectFrom('rate_limits').select('hits').where('bucket', '=', bucket).executeTakeFirst())?.hits ?? 0;
          let admitted = 0;
          const count = (r: ApiResponse) => {
            if (r.status !== 429) admitted++;
            return r;
          };
          const reset = Number(count(await a.api.get('/user/123456789012')).headers.get('x-ratelimit-reset'));
          if (reset * 1000 - Date.now() < 8_000) {
            await new Promise((r) => setTimeout(r, reset * 1000 - Date.now() + 50)); // a clock boundary
            admitted = 0; // a new window
          }
          count(await a.api.get('/user/123456789012'));
          const k = `both-${uid6()}`;
          const created = count(await a.api.call('POST', '/user', '{}', { 'Idempotency-Key': k }));
          const replayed = count(await on2.call('POST', '/user', '{}', { 'Idempotency-Key': k }));
          assert.equal(replayed.raw, created.raw, 'the other process replays the first answer');
          assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
          await waitFor('both flushed', async () => (await hits()) === admitted, 5000, 20);
          for (let i = 0; i < 20; i++) count(await a.api.get('/user/123456789012'));
          await waitFor('process 1 flushed', async () => (await hits()) === admitted, 5000, 20);
          // process 2 learns process 1's count at its next flush, which follows its next request
          count(await on2.get('/user/123456789012'));
          await waitFor('process 2 flushed', async () => (await hits()) === admitted, 5000, 20);
          let refused = 0;
          for (let i = 0; i < RATE_LIMIT; i++) if (count(await on2.get('/user/123456789012')).status === 429) refused++;
          assert.equal(admitted, RATE_LIMIT, 'the two processes together admitted exactly the limit');
          assert.ok(refused > 0);
          await waitFor('process 2 flushed', async () => (await hits()) === admitted, 5000, 20);
          // Process 1 has not flushed since process 2 went on, so it may admit what it has not heard
          // of: at most one flush interval of traffic (here one request), then it knows.
          const late = count(await a.api.get('/user/123456789012'));
          if (late.status !== 429) await waitFor('process 1 flushed', async () => (await hits()) === admitted, 5000, 20);
          assert.ok(admitted <= RATE_LIMIT + 1);
          assertEnvelope(await a.api.get('/user/123456789012'), 429, 'rate_limited');
        });
      });
    }

    describe('DATA_DIR', () => {
      it('is 0700 and every file the service created in it is 0600', async () => {
        await waitFor('chain state saved', async () => fs.existsSync(path.join(t.dataDir, 'chain.json')), 15_000);
        const mode = (p: string) => fs.lstatSync(p).mode & 0o777;
        assert.equal(mode(t.dataDir), 0o700);
        const seen: string[] = [];
        const walk = (dir: string) => {
          for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
            const p = path.join(dir, e.name);
            if (e.isDirectory()) {
              assert.equal(mode(p), 0o700, p);
              walk(p);
            } else if (e.isFile()) {
              assert.equal(mode(p), 0o600, p);
              seen.push(path.relative(t.dataDir, p));
            }
          }
        };
        walk(t.dataDir);
        for (const f of [
          'master.key',
          'operator.token',
          'chain.json',
          'anvil.pid',
          ...(db === 'sqlite' ? ['mintworks.sqlite', 'mintworks.sqlite-wal', 'mintworks.sqlite-shm'] : []),
        ]) {
          assert.ok(seen.includes(f), `${f} among ${seen.join(', ')}`);
        }
      });
    });

    // Last: it uses up this address's budget of failed authentications.
    describe('failed authentication is limited per client address', () => {
      it(trusted ? 'X-Forwarded-For from the trusted proxy names the client' : 'a forged X-Forwarded-For does not dodge the limit', async () => {
        const known = await t.newApp();
        assert.equal((await known.api.get('/user/123456789012')).status, 404); // verified: its credentials are known good
        const fresh = await t.newApp(); // never used: unknown to the service so far
        let n = 0;
        // From the untrusted socket every failure counts against 127.0.0.1, whatever the header says.
        const bad = (xff = trusted ? '203.0.113.7' : `198.51.100.${n++ % 250}`) =>
          new ApiClient(t.base, known.apiKey, 'not-a-token').call('GET', '/user/123456789012', undefined, { 'X-Forwarded-For': xff });
        let r = await bad();
        assertEnvelope(r, 401, 'unauthorized');
        if (Number(r.headers.get('x-ratelimit-reset')) * 1000 - Date.now() < 8_000) {
          await new Promise((res) => setTimeout(res, Number(r.headers.get('x-ratelimit-reset')) * 1000 - Date.now() + 50)); // a clock boundary
          r = await bad();
        }
        assert.equal(r.headers.get('x-ratelimit-limit'), String(AUTH_FAILURES));
        // earlier tests failed from this address too: count down what is left of its budget
        for (let left = Number(r.headers.get('x-ratelimit-remaining')); left > 0; left--) {
          r = await bad();
          assertEnvelope(r, 401, 'unauthorized');
          assert.equal(Number(r.headers.get('x-ratelimit-remaining')), left - 1);
        }
        for (let i = 0; i < 2; i++) {
          r = await bad();
          assertEnvelope(r, 429, 'rate_limited');
          assert.ok(Number(r.headers.get('retry-after')) >= 1);
        }
        const freshFrom = (xff: string) => fresh.api.call('GET', '/user/123456789012', undefined, { 'X-Forwarded-For': xff });
        if (trusted) {
          // the blocked client is 203.0.113.7 only
          assertEnvelope(await freshFrom('203.0.113.7'), 429, 'rate_limited');
          assertEnvelope(await bad('203.0.113.8'), 401);
          assert.equal((await freshFrom('203.0.113.8')).status, 404);
        } else {
          // the blocked client is the socket's address, whatever the header says: even valid new
          // credentials are not looked at, and no credentials at all is no way round either
          assertEnvelope(await freshFrom('192.0.2.1'), 429, 'rate_limited');
          assertEnvelope(await new ApiClient(t.base).get('/user/123456789012'), 429);
        }
        // credentials already verified keep working from the blocked address
        assert.equal((await known.api.call('GET', '/user/123456789012', undefined, { 'X-Forwarded-For': '203.0.113.7' })).status, 404);
      });
    });
  });
}
