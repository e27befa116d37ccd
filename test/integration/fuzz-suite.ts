// Property-based fuzzing of the 24 endpoints of the public API, POST /asset/batch and the 14 of /v1/item against a real service (HTTP + workers + embedded
// anvil), once per database. Requests are drawn around real fixtures (uids of this App and of another,
// minted assets, a deployed reward, ERC-1155 items with minted amounts) and mutated: wrong types, NUL and lone surrogates, malformed and
// non-UTF-8 bodies, odd content types, bad percent-encoding, exact amount literals, Idempotency-Keys,
// page cursors (well-formed, hostile once decoded, not base64url),
// missing or foreign credentials. Properties of every answer:
//   - never 5xx;
//   - JSON; a failure is the error envelope of the API (type consistent with the status, `detail` an
//     object or a non-empty array of objects with `message` last), a success is {success, data};
//   - rate-limit headers on every /v1 answer;
//   - a 4xx changes nothing: the row counts of every table a request can write are unchanged.
// FUZZ_RUNS (cases per database, default 2600) and FUZZ_SEED (to replay a failure) tune a run;
// FUZZ_DEBUG=<endpoint name prefix, e.g. "6 "> prints that endpoint's exchanges.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import fc from 'fast-check';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { ApiClient, waitFor } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createReward } from '../../src/services/rewards/index.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 2600);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

type TestApp = Awaited<ReturnType<TestService['newApp']>>;

/** A JSON number written exactly as given (e.g. 1.0000000000000000001), not as JavaScript would print it. */
class RawNumber {
  constructor(readonly literal: string) {}
}

function toJson(v: unknown): string {
  if (v instanceof RawNumber) return v.literal;
  if (Array.isArray(v)) return `[${v.map(toJson).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/** Any generated value as the text of a path segment or query parameter. */
const asText = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? 'undefined'));

/** Percent-encoding that also encodes lone surrogates (as the invalid UTF-8 a careless client sends). */
function pct(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff;
    if (pair) {
      out += encodeURIComponent(s.slice(i, i + 2));
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      out += `%${(0xe0 | (c >> 12)).toString(16)}%${(0x80 | ((c >> 6) & 0x3f)).toString(16)}%${(0x80 | (c & 0x3f)).toString(16)}`;
    } else {
      out += encodeURIComponent(s[i]);
    }
  }
  return out;
}

interface Req {
  endpoint: string;
  method: string;
  path: string; // after /v1, already encoded
  body?: unknown; // an object (sent as JSON), a string (sent raw) or a Buffer (sent raw)
  contentType?: string | null; // null: none
  auth: 'valid' | 'other-app' | 'none' | 'bad-token' | 'unknown-key';
  idempotencyKey?: string;
}

const ENVELOPE_TYPES = new Set(['client_error', 'validation_error', 'server_error']);

export function fuzzSuite(db: 'sqlite' | 'postgres'): void {
  describe(`fuzzing the public API on ${db}`, () => {
    let t: TestService;
    let app: TestApp;
    let other: TestApp;
    const f = {} as {
      users: string[];
      otherUsers: string[];
      collection: string;
      otherCollection: string;
      assets: string[];
      otherAssets: string[];
      reward: string;
      transfers: string[];
      burns: string[];
      allocations: string[];
      claims: string[];
      itemCollection: string;
      items: string[];
      otherItems: string[];
      itemMints: string[];
      itemTransfers: string[];
      itemBurns: string[];
    };

    before(async () => {
      // Limits on, but out of reach: their headers are checked on every answer.
      t = await startTestService(db, { RATE_LIMIT: '100000000', RATE_LIMIT_AUTH_FAILURES: '100000000' });
      [app, other] = await Promise.all([t.newApp(), t.newApp()]);
      [f.collection, f.otherCollection] = await Promise.all([t.newCollection(app.uid, true), t.newCollection(other.uid, false)]);
      const user = async (a: TestApp, body: object = {}) => (await a.api.post('/user', body)).body.data.uid as string;
      f.users = [await user(app, { email: 'fuzz@example.com', user_external_id: 'fuzz-1' }), await user(app), await user(app)];
      f.otherUsers = [await user(other)];
      const asset = async (a: TestApp, u: string, c: string) =>
        (
          await a.api.post('/asset', {
            user_uid: u,
            collection_uid: c,
            asset_external_id: `fx-${Math.random()}`,
            data: { name: `Fx ${Math.random()}`, unique_name: true, image_url: 'https://example.com/f.png', store_image_on_ipfs: false },
          })
        ).body.data.uid as string;
      f.assets = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => asset(app, f.users[i % 2], f.collection)));
      f.otherAssets = [await asset(other, f.otherUsers[0], f.otherCollection)];
      f.reward = (await createReward(t.svc.ctx, app.uid, { name: 'Fuzz', token_name: 'Fuzz', token_symbol: 'FZZ', supply: '1000000000' })).uid;
      await waitFor(
        'fixtures minted and deployed',
        async () => {
          const minted = await t.svc.ctx.db.selectFrom('assets').select('uid').where('uid', 'in', f.assets).where('mint_status', '=', 'minted').execute();
          const r = await t.svc.ctx.db.selectFrom('rewards').select('status').where('uid', '=', f.reward).executeTakeFirstOrThrow();
          return minted.length === f.assets.length && r.status === 'deployed';
        },
        60_000,
      );
      f.transfers = [
        (await app.api.post('/transfer', { asset_uid: f.assets[4], from_user_uid: f.users[0], to_address: privateKeyToAddress(generatePrivateKey()) })).body
          .data.uid,
      ];
      f.burns = [(await app.api.post('/burn', { asset_uid: f.assets[5], from_user_uid: f.users[1] })).body.data.uid];
      f.allocations = [(await app.api.post('/reward/allocate', { reward_uid: f.reward, to_user_uid: f.users[0], amount: 5, nonce: 'fx-1' })).body.data.uid];
      f.claims = [
        (await app.api.post('/reward/claim', { reward_uid: f.reward, from_user_uid: f.users[2], to_address: privateKeyToAddress(generatePrivateKey()) })).body
          .data.uid,
      ];
      await itemFixtures();
      for (const [k, v] of Object.entries(f)) assert.ok(Array.isArray(v) ? v.every((x) => /^\d{12}$/.test(x)) : /^\d{12}$/.test(v), `fixture ${k}`);
    });
    after(async () => {
      await t?.stop();
    });

    /** An editable ERC-1155 collection with two items, 1000 of the first minted to the first user, a transfer and a burn; another App's item. */
    async function itemFixtures(): Promise<void> {
      const admin = new ApiClient(`${t.svc.url}/admin/v1`, undefined, t.svc.ctx.installation.operatorToken);
      const collectionOf = async (a: TestApp) => {
        const c = await admin.post(`/apps/${a.uid}/collections`, { name: 'Fuzz items', symbol: 'FZI', standard: 'ERC1155', editable_assets: true });
        assert.equal(c.status, 201, c.raw);
        return c.body.data.uid as string;
      };
      const [mine, theirs] = await Promise.all([collectionOf(app), collectionOf(other)]);
      f.itemCollection = mine;
      const data = { name: 'Fuzz potion', image_url: 'https://example.com/p.png', store_image_on_ipfs: false };
      const item = async (a: TestApp, c: string, id: string, max_supply: unknown) =>
        (await a.api.post('/item', { collection_uid: c, item_external_id: id, max_supply, data })).body.data.uid as string;
      f.items = [await item(app, mine, 'fz-1', null), await item(app, mine, 'fz-2', 10)];
      f.otherItems = [await item(other, theirs, 'fz-1', null)];
      f.itemMints = [(await app.api.post('/item/mint', { item_uid: f.items[0], to_user_uid: f.users[0], amount: 1000, nonce: 'fx-1' })).body.data.uid];
      await waitFor('item fixtures minted', async () => (await app.api.get(`/item/mint/${f.itemMints[0]}`)).body.data.status === 'done', 60_000);
      const action = async (kind: 'transfer' | 'burn', body: object) => {
        const r = await app.api.post(`/item/${kind}`, { item_uid: f.items[0], from_user_uid: f.users[0], amount: 1, ...body });
        assert.equal(r.status, 201, r.raw);
        return r.body.data.uid as string;
      };
      f.itemTransfers = [await action('transfer', { to_address: privateKeyToAddress(generatePrivateKey()) })];
      f.itemBurns = [await action('burn', {})];
    }

    /** Row counts of every table a request can write (workers never add rows to these). */
    async function counts(): Promise<Record<string, number>> {
      const tables = [
        'apps',
        'api_keys',
        'users',
        'collections',
        'assets',
        'transfers',
        'burns',
        'rewards',
        'allocations',
        'claims',
        'idempotency_keys',
        'items',
        'item_mints',
        'item_transfers',
        'item_burns',
      ];
      const q = sql.join(tables.map((tb) => sql`(select count(*) from ${sql.table(tb)}) as ${sql.ref(tb)}`));
      const { rows } = await sql<Record<string, number | string>>`select ${q}`.execute(t.svc.ctx.db);
      return Object.fromEntries(Object.entries(rows[0]).map(([k, v]) => [k, Number(v)]));
    }

    it('never answers 5xx, always in the envelope, and changes nothing on a 4xx', { timeout: 15 * 60_000 }, async () => {
      // ------------------------------------------------------------------ values
      const units = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)); // lone surrogates included
      // What databases and parsers trip over: NUL, unpaired surrogates, percent signs, separators.
      const hostile = fc.string({
        unit: fc.constantFrom('\u0000', '\ud800', '\udfff', '\ud83d', 'a', 'Z', '0', 'é', '🗡', '%', '/', '\\', '"', ' ', '\n'),
        minLength: 1,
        maxLength: 6,
      });
      const weirdText = fc.oneof(
        { weight: 3, arbitrary: hostile },
        fc.string({ maxLength: 12 }),
        fc.string({ unit: 'binary', maxLength: 12 }),
        fc.string({ unit: units, maxLength: 8 }),
        fc.constantFrom(
          '',
          ' ',
          '\u0000',
          'a\u0000b',
          '\ud800',
          'x\udfff',
          '\udc00\ud800',
          'null',
          '0',
          '-1',
          '1e400',
          '%00',
          '%ff',
          '../..',
          '?#',
          'x'.repeat(300),
          '𝒜🗡',
          '\u202e',
          "Robert'); DROP TABLE users;--",
        ),
      );
      const weird = fc.oneof(
        { weight: 4, arbitrary: weirdText },
        {
          weight: 1,
          arbitrary: fc.oneof(
            fc.integer(),
            fc.double(),
            fc.boolean(),
            fc.constant(null),
            fc.array(fc.string({ maxLength: 3 }), { maxLength: 2 }),
            fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 }),
          ),
        },
      );
      /** `arb` in about one case of `n`, else null. */
      const sometimes = <T>(arb: fc.Arbitrary<T>, n: number) => fc.oneof({ weight: n - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb });
      const q = (params: Record<string, unknown>) =>
        Object.entries(params)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => `${k}=${pct(asText(v))}`)
          .join('&');
      const get = (endpoint: string, path: fc.Arbitrary<string>) => path.map((p) => ({ endpoint, method: 'GET', path: p }));
      const byUid = (endpoint: string, prefix: string, uid: fc.Arbitrary<unknown>) =>
        get(
          endpoint,
          uid.map((u) => `${prefix}/${pct(asText(u))}`),
        );
      const byQuery = (endpoint: string, prefix: string, fields: Record<string, fc.Arbitrary<unknown>>) =>
        get(
          endpoint,
          fc.record(fields, { requiredKeys: [] }).map((o) => `${prefix}?${q(o)}`),
        );
      const send = (endpoint: string, method: string, path: fc.Arbitrary<string>, body: fc.Arbitrary<unknown>) =>
        fc.tuple(path, body).map(([p, b]) => ({ endpoint, method, path: p, body: b }));
      const ABSENT = Symbol('absent');

      /**
       * The 24 endpoints, the batch create and the 14 item endpoints, plus what is no endpoint. `chaotic`: every field may be weird or missing; else
       * the requests are well-formed around the fixtures, so success paths (and their business-rule
       * refusals: not owner, already exists, budget...) are reached too.
       */
      const endpointsFor = (chaotic: boolean) => {
        /** A plausible value, now and then (chaotic) a weird one. */
        const mostly = (valid: fc.Arbitrary<unknown>) => (chaotic ? fc.oneof({ weight: 6, arbitrary: valid }, { weight: 1, arbitrary: weird }) : valid);
        const pick = (known: string[], foreign: string[] = []) =>
          fc.oneof(
            { weight: 12, arbitrary: fc.constantFrom(...known) },
            ...(foreign.length ? [{ weight: 1, arbitrary: fc.constantFrom(...foreign) }] : []),
            { weight: 1, arbitrary: fc.stringMatching(/^[1-9]\d{11}$/) },
            ...(chaotic ? [{ weight: 3, arbitrary: weird }] : []),
          );
        /** An object of these fields, each (chaotic) missing now and then, plus now and then an unknown one. */
        const obj = (fields: Record<string, fc.Arbitrary<unknown>>) =>
          fc
            .tuple(
              fc.record(
                Object.fromEntries(
                  Object.entries(fields).map(([k, a]) => [
                    k,
                    chaotic ? fc.oneof({ weight: 10, arbitrary: a }, { weight: 1, arbitrary: fc.constant(ABSENT) }) : a,
                  ]),
                ),
              ),
              sometimes(fc.dictionary(fc.string({ maxLength: 6 }), weird, { maxKeys: 2 }), 5),
            )
            .map(([o, extra]) => ({ ...(extra ?? {}), ...Object.fromEntries(Object.entries(o).filter(([, v]) => v !== ABSENT)) }));
        const user = pick(f.users, f.otherUsers);
        const assetUid = pick(f.assets, f.otherAssets);
        const collection = pick([f.collection], [f.otherCollection]);
        const reward = pick([f.reward]);
        const item = pick(f.items, f.otherItems);
        const itemCollection = pick([f.itemCollection], [f.collection]);
        const anyUid = pick(
          [...f.users, ...f.assets, f.collection, f.reward, ...f.transfers, ...f.burns, ...f.allocations, ...f.claims],
          [...f.otherUsers, ...f.otherAssets, f.otherCollection],
        );
        const address = fc.oneof(
          {
            weight: 6,
            arbitrary: fc
              .tuple(fc.uint8Array({ minLength: 20, maxLength: 20 }), fc.constantFrom('lower', 'upper', 'mixed'))
              .map(
                ([b, c]) =>
                  `0x${[...Buffer.from(b).toString('hex')].map((ch, i) => (c === 'upper' || (c === 'mixed' && i % 3 === 0) ? ch.toUpperCase() : ch)).join('')}`,
              ),
          },
          { weight: 1, arbitrary: fc.constantFrom('0x0000000000000000000000000000000000000000', '0x123', f.users[0]) },
          ...(chaotic ? [{ weight: 1, arbitrary: weird }] : []),
        );
        const email = fc.oneof(
          {
            weight: 8,
            arbitrary: fc
              .tuple(fc.stringMatching(/^[A-Za-z0-9._+-]{1,10}$/), fc.constantFrom('example.com', 'Example.ORG', 'mail.example.net'))
              .map(([l, d]) => `${l}@${d}`),
          },
          fc.emailAddress(),
          fc.constantFrom('FUZZ@example.com', 'fuzz@EXAMPLE.com', 'not-an-email', 'a@b'),
          ...(chaotic ? [weird] : []),
        );
        const amount = fc.oneof(
          { weight: 4, arbitrary: fc.integer({ min: -5, max: 1000 }) },
          fc.double({ noNaN: true }),
          fc.constantFrom('1.5', '0.000000000000000001', '1e3', ' 1', '-1', 'NaN', '0x10', '1.0000000000000000001'),
          fc
            .constantFrom(
              '1.0000000000000000001',
              '9007199254740993',
              '1e400',
              '-0',
              '0.000000000000000001',
              '2.50e-3',
              '1E-19',
              '123456789012345678901234567890',
            )
            .map((lit) => new RawNumber(lit)),
          ...(chaotic ? [weird] : []),
        );
        const url = fc.oneof(
          { weight: 8, arbitrary: fc.constantFrom('https://example.com/a.png', 'http://127.0.0.1/x.png', 'ipfs://bafy') },
          fc.constantFrom('ftp://x', 'https://example.invalid/i.png', ' https://example.com/'),
          fc.webUrl(),
          ...(chaotic ? [weird] : []),
        );
        const attribute = obj({
          trait_type: mostly(fc.string({ minLength: 1, maxLength: 8 })),
          value: mostly(fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }))),
          display_type: fc.option(mostly(fc.string({ maxLength: 8 }))),
        });
        const assetData = (withStore: boolean) =>
          obj({
            name: mostly(fc.string({ minLength: 1, maxLength: 10 })),
            unique_name: mostly(fc.boolean()),
            image_url: url,
            ...(withStore ? { store_image_on_ipfs: mostly(fc.oneof({ weight: 15, arbitrary: fc.constant(false) }, fc.constant(true))) } : {}),
            description: fc.option(mostly(fc.string({ maxLength: 20 }))),
            external_url: fc.option(url),
            attributes: fc.option(mostly(fc.array(attribute, { maxLength: 3 }))),
          });
        const salePrice = fc.option(fc.oneof({ weight: 4, arbitrary: fc.double({ min: 0, max: 1e6, noNaN: true }) }, fc.double(), fc.integer(), amount));
        const assetParams = obj({
          user_uid: user,
          collection_uid: collection,
          asset_external_id: mostly(fc.string({ minLength: 1, maxLength: 10 })),
          sale_price_in_usd: salePrice,
          data: mostly(assetData(true)),
        });
        const nonce = mostly(fc.oneof(fc.string({ minLength: 1, maxLength: 10 }), fc.nat(), fc.constant(new RawNumber('9007199254740993'))));
        const external = mostly(fc.oneof(fc.constant('fuzz-1'), fc.string({ maxLength: 10 })));
        // Cursors: mostly absent; else well-formed, or well-formed base64url of hostile content (NUL, lone
        // surrogates, wrong shapes, bytes that are not UTF-8), or not base64url at all.
        const b64 = (text: string | Uint8Array) => Buffer.from(text as string).toString('base64url');
        const cursor = fc.oneof(
          { weight: 6, arbitrary: fc.constant(undefined) },
          fc
            .tuple(fc.constantFrom('2026-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', ''), fc.stringMatching(/^[1-9]\d{11}$/))
            .map((pos) => b64(JSON.stringify(pos))),
          fc.tuple(weirdText, weirdText).map((pos) => b64(JSON.stringify(pos))),
          weird.map((v) => b64(JSON.stringify([v, v, v]) ?? 'null')),
          fc.uint8Array({ maxLength: 24 }).map((bytes) => b64(bytes)),
          weirdText,
        );
        const limit = fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, fc.integer({ min: -1, max: 300 }), weirdText);
        const paged = { cursor, limit };
        return [
          send(
            '1 POST /user',
            'POST',
            fc.constant('/user'),
            obj({ email: fc.option(email), user_external_id: fc.option(mostly(fc.string({ maxLength: 10 }))) }),
          ),
          byUid('2 GET /user/{uid}', '/user', user),
          byQuery('3 GET /user?email=', '/user', { email }),
          byQuery('4 GET /user?user_external_id=', '/user', { user_external_id: external, client_id: external }),
          byUid('5 GET /collection/{uid}', '/collection', collection),
          send('6 POST /asset', 'POST', fc.constant('/asset'), assetParams),
          send(
            '25 POST /asset/batch',
            'POST',
            fc.constant('/asset/batch'),
            obj({
              assets: mostly(
                fc.oneof(
                  { weight: 8, arbitrary: fc.array(mostly(assetParams), { minLength: 1, maxLength: 4 }) },
                  fc.constant([]),
                  fc.array(fc.constant({}), { minLength: 101, maxLength: 102 }),
                ),
              ),
            }),
          ),
          byUid('7 GET /asset/{uid}', '/asset', assetUid),
          byQuery('8 GET /asset?user_uid=', '/asset', { user_uid: user, ...paged }),
          send(
            '9 PUT /asset/{uid}',
            'PUT',
            assetUid.map((u) => `/asset/${pct(asText(u))}`),
            obj({ data: mostly(assetData(false)) }),
          ),
          send('10 POST /transfer', 'POST', fc.constant('/transfer'), obj({ asset_uid: assetUid, from_user_uid: user, to_address: address })),
          byUid('11 GET /transfer/{uid}', '/transfer', pick(f.transfers, f.assets)),
          byQuery('12 GET /transfer?user_uid=', '/transfer', { user_uid: user, ...paged }),
          send('13 POST /burn', 'POST', fc.constant('/burn'), obj({ asset_uid: assetUid, from_user_uid: user })),
          byUid('14 GET /burn/{uid}', '/burn', pick(f.burns, f.transfers)),
          byQuery('15 GET /burn?user_uid=', '/burn', { user_uid: user, ...paged }),
          byQuery('16 GET /deposit', '/deposit', { user_uid: user, collection_uid: collection }),
          byUid('17 GET /reward/{uid}', '/reward', reward),
          byQuery('18 GET /reward/balance', '/reward/balance', { reward_uid: reward, user_uid: user }),
          send(
            '19 POST /reward/allocate',
            'POST',
            fc.constantFrom('/reward/allocate', '/reward/allocation'),
            obj({ reward_uid: reward, to_user_uid: user, amount, nonce }),
          ),
          byUid('20 GET /reward/allocate/{uid}', '/reward/allocate', pick(f.allocations, f.claims)),
          byQuery('21 GET /reward/allocate?user_uid=', '/reward/allocate', { user_uid: user, ...paged }),
          send('22 POST /reward/claim', 'POST', fc.constant('/reward/claim'), obj({ reward_uid: reward, from_user_uid: user, to_address: address })),
          byUid('23 GET /reward/claim/{uid}', '/reward/claim', pick(f.claims, f.allocations)),
          byQuery('24 GET /reward/claim?user_uid=', '/reward/claim', { user_uid: user, ...paged }),
          // Items (ERC-1155): amounts as the rewards' (numbers, strings, exact literals), nonces unique per item.
          send(
            '26 POST /item',
            'POST',
            fc.constant('/item'),
            obj({
              collection_uid: itemCollection,
              item_external_id: mostly(fc.string({ minLength: 1, maxLength: 10 })),
              max_supply: fc.option(amount),
              data: mostly(assetData(true)),
            }),
          ),
          byUid('27 GET /item/{uid}', '/item', item),
          byQuery('28 GET /item?collection_uid=', '/item', { collection_uid: itemCollection }),
          send(
            '29 PUT /item/{uid}',
            'PUT',
            item.map((u) => `/item/${pct(asText(u))}`),
            obj({ data: mostly(assetData(true)) }),
          ),
          send('30 POST /item/mint', 'POST', fc.constant('/item/mint'), obj({ item_uid: item, to_user_uid: user, amount, nonce })),
          byUid('31 GET /item/mint/{uid}', '/item/mint', pick(f.itemMints, f.itemTransfers)),
          byQuery('32 GET /item/mint?user_uid=', '/item/mint', { user_uid: user, ...paged }),
          byQuery('33 GET /item/balance', '/item/balance', { item_uid: item, user_uid: user }),
          send('34 POST /item/transfer', 'POST', fc.constant('/item/transfer'), obj({ item_uid: item, from_user_uid: user, to_address: address, amount })),
          byUid('35 GET /item/transfer/{uid}', '/item/transfer', pick(f.itemTransfers, f.itemBurns)),
          byQuery('36 GET /item/transfer?user_uid=', '/item/transfer', { user_uid: user, ...paged }),
          send('37 POST /item/burn', 'POST', fc.constant('/item/burn'), obj({ item_uid: item, from_user_uid: user, amount })),
          byUid('38 GET /item/burn/{uid}', '/item/burn', pick(f.itemBurns, f.itemMints)),
          byQuery('39 GET /item/burn?user_uid=', '/item/burn', { user_uid: user, ...paged }),
          // and what is no endpoint at all: unknown routes and methods, raw bad percent-encoding
          fc
            .tuple(
              fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'),
              fc.oneof(
                fc.constantFrom('/', '/nope', '/user/', '/reward/', '/user/%', '/user/%zz', '/asset/%c3%28', '//user//1', `/user/${'9'.repeat(5000)}`),
                anyUid.map((u) => `/${pct(asText(u))}`),
              ),
            )
            .map(([method, path]) => ({ endpoint: 'other', method, path })),
        ];
      };
      const endpoints = endpointsFor(true);
      const wellFormed = endpointsFor(false);

      const request: fc.Arbitrary<Req> = fc
        .tuple(
          fc.oneof(fc.oneof(...endpoints), fc.oneof(...wellFormed)),
          fc.oneof(
            { weight: 12, arbitrary: fc.constant('valid' as const) },
            fc.constantFrom('other-app' as const, 'none' as const, 'bad-token' as const, 'unknown-key' as const),
          ),
          sometimes(
            fc.constantFrom(
              'application/json; charset=utf-8',
              'text/plain',
              'application/x-www-form-urlencoded',
              'APPLICATION/JSON',
              'application/jsonx',
              'none',
            ),
            8,
          ),
          sometimes(fc.oneof({ weight: 6, arbitrary: fc.uuid() }, fc.constantFrom('same-key-1', 'same-key-2', 'é', 'x'.repeat(300))), 4),
          sometimes(
            fc.oneof(
              fc.string({ maxLength: 20 }),
              fc.constantFrom('{', '{"a":', '[]', 'null', '"x"', '{"a":1}{'),
              fc.uint8Array({ maxLength: 12 }).map((b) => Buffer.from(b)),
            ),
            10,
          ),
        )
        .map(([e, auth, contentType, idempotencyKey, rawBody]) => ({
          ...e,
          auth,
          ...(contentType !== null ? { contentType: contentType === 'none' ? null : contentType } : {}), // 'none': no Content-Type at all
          ...(idempotencyKey !== null ? { idempotencyKey } : {}),
          ...(rawBody !== null && (e.method === 'POST' || e.method === 'PUT') ? { body: rawBody } : {}),
        }));

      // ---------------------------------------------------------------- property
      const stats = new Map<string, Map<number, number>>();
      let previous = await counts();
      const property = fc.asyncProperty(request, async (r) => {
        const headers: Record<string, string> = {};
        const creds = r.auth === 'other-app' ? other : app;
        if (r.auth !== 'none') {
          headers['X-API-KEY'] = r.auth === 'unknown-key' ? 'mw_unknown' : creds.apiKey;
          headers.Authorization = `Bearer ${r.auth === 'bad-token' ? 'x.y.z' : creds.api.token}`;
        }
        let payload: string | ArrayBuffer | undefined;
        if (r.body !== undefined) {
          payload = typeof r.body === 'string' ? r.body : Buffer.isBuffer(r.body) ? Uint8Array.from(r.body).buffer : toJson(r.body);
          headers['Content-Type'] = 'application/json';
        }
        if (r.contentType !== undefined) {
          if (r.contentType === null) delete headers['Content-Type'];
          else headers['Content-Type'] = r.contentType;
        }
        if (r.idempotencyKey !== undefined) headers['Idempotency-Key'] = r.idempotencyKey;
        const res = await fetch(`${t.base}${r.path}`, { method: r.method, headers, body: payload, signal: AbortSignal.timeout(30_000) });
        const raw = await res.text();
        const what = `${r.method} ${r.path.slice(0, 200)} -> ${res.status} ${raw.slice(0, 300)}`;
        if (process.env.FUZZ_DEBUG && r.endpoint.startsWith(process.env.FUZZ_DEBUG)) process.stdout.write(`## ${what}\n`);
        const perStatus = stats.get(r.endpoint) ?? new Map<number, number>();
        perStatus.set(res.status, (perStatus.get(res.status) ?? 0) + 1);
        stats.set(r.endpoint, perStatus);

        assert.ok(res.status < 500, what);
        assert.match(res.headers.get('content-type') ?? '', /^application\/json/, what);
        for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) assert.match(res.headers.get(h) ?? '', /^\d+$/, `${h}: ${what}`);
        const body = JSON.parse(raw);
        if (res.status >= 400) {
          assert.deepEqual(Object.keys(body), ['success', 'error'], what);
          assert.equal(body.success, false, what);
          assert.deepEqual(Object.keys(body.error), ['type', 'detail'], what);
          assert.ok(ENVELOPE_TYPES.has(body.error.type), what);
          if (body.error.type === 'validation_error') assert.equal(res.status, 400, what);
          assert.notEqual(body.error.type, 'server_error', what);
          const details = Array.isArray(body.error.detail) ? body.error.detail : [body.error.detail];
          assert.ok(details.length > 0 && details.every((d: unknown) => d !== null && typeof d === 'object' && !Array.isArray(d)), what);
          for (const d of details) {
            assert.equal(typeof d.code, 'string', what);
            assert.equal(typeof d.message, 'string', what);
            if ('field_name' in d) assert.equal(typeof d.field_name, 'string', what);
            assert.equal(Object.keys(d).at(-1), 'message', what);
          }
          const now = await counts();
          assert.deepEqual(now, previous, `a ${res.status} changed rows: ${what}`);
        } else {
          assert.ok(res.status === 200 || res.status === 201, what);
          assert.deepEqual(Object.keys(body), ['success', 'data'], what);
          assert.equal(body.success, true, what);
          // A batch answers each item in order: its uid, or why it was refused.
          if (r.endpoint.startsWith('25 ')) {
            assert.ok(Array.isArray(body.data) && body.data.length >= 1 && body.data.length <= 100, what);
            for (const item of body.data)
              assert.ok(
                /^\d{12}$/.test(item.uid) ||
                  (typeof item.error?.code === 'string' && typeof item.error?.message === 'string' && Object.keys(item.error).at(-1) === 'message'),
                what,
              );
          }
          previous = await counts();
        }
      });
      const started = Date.now();
      await fc.assert(property, {
        numRuns: RUNS,
        ...(SEED === undefined ? {} : { seed: SEED }),
        interruptAfterTimeLimit: 14 * 60_000,
        markInterruptAsFailure: true,
      });

      // Every endpoint was exercised, and reached both its successes and its refusals.
      const summary = [...stats]
        .sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }))
        .map(([e, m]) => `${e}: ${[...m].map(([s, n]) => `${s}×${n}`).join(' ')}`);
      process.stdout.write(`# fuzz on ${db}: ${RUNS} cases in ${Date.now() - started} ms\n# ${summary.join('\n# ')}\n`);
      const twoXX = (e: string) => [...(stats.get(e) ?? [])].some(([s]) => s < 300);
      const fourXX = (e: string) => [...(stats.get(e) ?? [])].some(([s]) => s >= 400);
      const names = endpoints.length - 1;
      assert.equal([...stats.keys()].filter((e) => e !== 'other').length, names, `all ${names} endpoints exercised`);
      for (const e of stats.keys()) if (e !== 'other') assert.ok(fourXX(e), `${e} refused something`);
      const withSuccess = [...stats.keys()].filter((e) => e !== 'other' && twoXX(e));
      assert.ok(withSuccess.length >= 34, `successes reached on ${withSuccess.length} endpoints: ${withSuccess.join(', ')}`);
    });
  });
}
