// /openapi.json against a real OpenAPI validator, and the real answers of every documented route
// (successes and the documented failures) against the schema the document gives for their status.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv } from 'ajv';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import openapiTS, { astToString } from 'openapi-typescript';
import { V1_DOCS } from '../../src/http/v1/index.js';
import { ADMIN_DOCS } from '../../src/http/admin/index.js';
import { ApiClient, tempDir, waitFor, type ApiResponse } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';

/** Every documented route: each route module declares its own, each area gathers them. */
const ROUTE_DOCS = { ...V1_DOCS, ...ADMIN_DOCS };

const require = createRequire(import.meta.url);
const oasPath = (route: string) => route.replace(/:(\w+)/g, '{$1}');

describe('OpenAPI document', () => {
  let t: TestService;
  let doc: any;
  let receiver: http.Server;
  let hookUrl: string;
  const ajv = new Ajv({ strict: false, allErrors: true });
  /** Real answers, kept for the generated-types check. */
  const answers: Record<string, unknown> = {};
  /** `METHOD route status` of every answer checked. */
  const checked = new Set<string>();

  /** Validates one real answer against the schema documented for its route and status. */
  function conforms(method: string, route: string, r: ApiResponse): ApiResponse {
    const op = doc.paths[oasPath(route)]?.[method.toLowerCase()];
    assert.ok(op, `${method} ${route} is not in the document`);
    const documented = op.responses[String(r.status)];
    assert.ok(documented, `${method} ${route} answered ${r.status}, which it does not document (${Object.keys(op.responses)}): ${r.raw}`);
    // The schema's $refs point into the document's components.
    const validate = ajv.compile({ ...documented.content['application/json'].schema, components: doc.components });
    assert.ok(validate(r.body), `${method} ${route} ${r.status}: ${ajv.errorsText(validate.errors)}\n${r.raw}`);
    checked.add(`${method} ${route} ${r.status}`);
    return r;
  }

  before(async () => {
    receiver = http.createServer((req, res) => req.resume().on('end', () => res.writeHead(204).end()));
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    hookUrl = `http://127.0.0.1:${(receiver.address() as any).port}/hook`;
    t = await startTestService('sqlite', { OUTBOUND_ALLOW_PRIVATE: 'true', RATE_LIMIT_AUTH_FAILURES: '30' });
    doc = await (await fetch(`${t.svc.url}/openapi.json`)).json();
  });
  after(async () => {
    await t?.stop();
    receiver?.close();
  });

  it('is a valid OpenAPI document', async () => {
    const result = await new Validator().validate(doc);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  });

  it('documents every route: summary, success (201 for creates), error envelope, security', () => {
    for (const [key, route] of Object.entries(ROUTE_DOCS)) {
      const [method, url] = key.split(' ');
      const op = doc.paths[oasPath(url)]?.[method.toLowerCase()];
      assert.ok(op, `${key} missing`);
      assert.ok(op.summary, `${key}: no summary`);
      assert.equal(op.operationId, route.operationId, `${key}: operationId`);
      assert.match(op.operationId, /^[a-z][a-zA-Z]+$/, `${key}: a camelCase operationId`);
      const codes = Object.keys(op.responses);
      assert.ok(codes.includes(String(route.status ?? 200)), `${key}: ${codes}`);
      if (method === 'POST' && route.status === 201) assert.ok(!codes.includes('200'), `${key}: a create answers 201`);
      for (const c of url.startsWith('/admin/') ? ['400', '401', '404'] : ['400', '401', '404', '429']) {
        const media = op.responses[c]?.content['application/json'];
        assert.equal(media?.schema.$ref, '#/components/schemas/Error', `${key} ${c}: the one error envelope`);
        assert.equal(media.example.success, false, `${key} ${c}: an example`);
      }
      if (url.startsWith('/v1/') && method !== 'GET') for (const c of ['409', '422']) assert.ok(op.responses[c], `${key} ${c}`);
      if (url.startsWith('/admin/')) assert.deepEqual(op.security, [{ operatorToken: [] }], key);
      else assert.equal(op.security, undefined, `${key} uses the document's default (API key and token)`);
    }
    const ids = Object.values(ROUTE_DOCS).map((r) => r.operationId);
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
    // The resources are named components, referenced by the answers that carry them.
    for (const name of [
      'User',
      'Collection',
      'Asset',
      'Transfer',
      'Burn',
      'Deposit',
      'Reward',
      'RewardBalance',
      'Allocation',
      'Claim',
      'App',
      'Webhook',
      'WebhookDelivery',
      'Error',
      'AssetBatchResult',
      'BatchItemError',
      'AdminCollection',
    ]) {
      assert.ok(doc.components.schemas[name], `components.schemas.${name}`);
    }
    assert.equal(doc.paths['/v1/asset/{uid}'].get.responses['200'].content['application/json'].schema.properties.data.$ref, '#/components/schemas/Asset');
    assert.equal(doc.paths['/v1/asset'].get.responses['200'].content['application/json'].schema.properties.data.items.$ref, '#/components/schemas/Asset');
    assert.deepEqual(
      Object.keys(doc.components.schemas).filter((n) => n.endsWith('Input')),
      [],
      'no unreferenced input twins',
    );
    assert.deepEqual(doc.security, [{ apiKey: [], bearer: [] }]);
    assert.equal(doc.components.securitySchemes.operatorToken.scheme, 'bearer');
    assert.doesNotMatch(JSON.stringify(doc), /API\.md/);
    // Every /v1 and /admin/v1 operation in the document is one of ROUTE_DOCS.
    for (const [p, ops] of Object.entries<any>(doc.paths)) {
      for (const m of Object.keys(ops))
        assert.ok(
          Object.keys(ROUTE_DOCS).some((k) => k === `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`),
          `${m} ${p} has no route doc`,
        );
    }
  });

  it('gives every nullable schema of a request body a type (OpenAPI 3.0 ignores `nullable` without one)', () => {
    const untyped: string[] = [];
    const walk = (schema: any, where: string): void => {
      if (!schema || typeof schema !== 'object') return;
      if (schema.nullable === true && schema.type === undefined) untyped.push(where);
      for (const [k, v] of Object.entries(schema)) if (v && typeof v === 'object') walk(v, `${where}.${k}`);
    };
    for (const [url, ops] of Object.entries<any>(doc.paths))
      for (const [method, op] of Object.entries<any>(ops)) walk(op.requestBody?.content?.['application/json']?.schema, `${method} ${url}`);
    assert.deepEqual(untyped, []);
    const maxSupply = doc.paths['/v1/item'].post.requestBody.content['application/json'].schema.properties.max_supply;
    assert.deepEqual(
      maxSupply.anyOf.map((s: any) => [s.type, s.nullable]),
      [
        ['integer', true],
        ['string', true],
      ],
    );
  });

  it('real answers of every route match their documented schemas', async () => {
    const base = t.svc.url;
    const operator = new ApiClient(`${base}/admin/v1`, undefined, t.svc.ctx.installation.operatorToken);
    const admin = (method: string, route: string, path: string, body?: unknown) =>
      operator.call(method, path, body).then((r) => conforms(method, `/admin/v1${route}`, r));

    const newApp = (await admin('POST', '/apps', '/apps', { name: 'OpenAPI', environment: 'development' })).body.data;
    await admin('GET', '/apps', '/apps');
    const { app, api } = await (async () => {
      const a = await t.newApp();
      return { app: a, api: a.api };
    })();
    const v1 = (method: string, route: string, path: string, body?: unknown) => api.call(method, path, body).then((r) => conforms(method, `/v1${route}`, r));

    // Collections (admin create -> deployed), users, assets.
    const coll = (await admin('POST', '/apps/:uid/collections', `/apps/${app.uid}/collections`, { name: 'Docs', symbol: 'DOC', editable_assets: true })).body
      .data.uid;
    await waitFor('deployed', async () => (await api.get(`/collection/${coll}`)).body.data.status === 'deployed', 30_000);
    await admin('GET', '/apps/:uid/collections', `/apps/${app.uid}/collections`);
    await v1('GET', '/collection/:uid', `/collection/${coll}`);
    const user = (await v1('POST', '/user', '/user', { email: 'docs@example.com' })).body.data.uid;
    const other = (await v1('POST', '/user', '/user', { user_external_id: 'other' })).body.data.uid;
    answers.user = (await v1('GET', '/user/:uid', `/user/${user}`)).body;
    await v1('GET', '/user', '/user?email=DOCS@example.com');
    await admin('GET', '/apps/:uid/users', `/apps/${app.uid}/users`);
    const assetBody = (ext: string) => ({
      user_uid: user,
      collection_uid: coll,
      asset_external_id: ext,
      sale_price_in_usd: 5,
      data: {
        name: 'Sword',
        unique_name: false,
        image_url: 'https://example.com/s.png',
        store_image_on_ipfs: false,
        attributes: [{ trait_type: 'power', value: 9 }],
      },
    });
    const asset = (await v1('POST', '/asset', '/asset', assetBody('a1'))).body.data.uid;
    const asset2 = (await v1('POST', '/asset', '/asset', assetBody('a2'))).body.data.uid;
    await v1('GET', '/asset/:uid', `/asset/${asset}`); // not minted yet: nulls
    await waitFor(
      'minted',
      async () => (await api.get(`/asset/${asset}`)).body.data.is_minted && (await api.get(`/asset/${asset2}`)).body.data.is_minted,
      30_000,
    );
    answers.asset = (await v1('GET', '/asset/:uid', `/asset/${asset}`)).body;
    answers.assets = (await v1('GET', '/asset', `/asset?user_uid=${user}`)).body;
    await v1('PUT', '/asset/:uid', `/asset/${asset}`, { data: { name: 'Sword+', unique_name: false, image_url: 'https://example.com/s2.png' } });
    await v1('GET', '/deposit', `/deposit?user_uid=${other}&collection_uid=${coll}`);
    await v1('POST', '/asset/batch', '/asset/batch', { assets: [assetBody('b1'), { ...assetBody('b2'), collection_uid: '999999999999' }] });
    await admin('PATCH', '/apps/:uid/collections/:collection', `/apps/${app.uid}/collections/${coll}`, {
      royalty_receiver: '0x000000000000000000000000000000000000bEEF',
      royalty_bps: 250,
    });

    // Transfers and burns.
    const transfer = (
      await v1('POST', '/transfer', '/transfer', { asset_uid: asset, from_user_uid: user, to_address: '0x000000000000000000000000000000000000dEaD' })
    ).body.data.uid;
    await v1('GET', '/transfer/:uid', `/transfer/${transfer}`);
    const burn = (await v1('POST', '/burn', '/burn', { asset_uid: asset2, from_user_uid: user })).body.data.uid;
    await v1('GET', '/burn/:uid', `/burn/${burn}`);
    await waitFor(
      'transfer and burn done',
      async () => (await api.get(`/transfer/${transfer}`)).body.data.status === 'done' && (await api.get(`/burn/${burn}`)).body.data.status === 'done',
      30_000,
    );
    await v1('GET', '/transfer/:uid', `/transfer/${transfer}`);
    await v1('GET', '/transfer', `/transfer?user_uid=${user}`);
    await v1('GET', '/burn/:uid', `/burn/${burn}`);
    await v1('GET', '/burn', `/burn?user_uid=${user}`);

    // Rewards.
    const reward = (
      await admin('POST', '/apps/:uid/rewards', `/apps/${app.uid}/rewards`, {
        name: 'Gems',
        token_name: 'Gem',
        token_symbol: 'GEM',
        supply: '1000',
        withdraw_receiver: '0x000000000000000000000000000000000000bEEF',
      })
    ).body.data.uid;
    await waitFor('reward deployed', async () => (await api.get(`/reward/${reward}`)).body.data.status === 'deployed', 30_000);
    await v1('GET', '/reward/:uid', `/reward/${reward}`);
    await admin('GET', '/apps/:uid/rewards', `/apps/${app.uid}/rewards`);
    await admin('GET', '/apps/:uid/rewards/:reward', `/apps/${app.uid}/rewards/${reward}`);
    const alloc = (await v1('POST', '/reward/allocate', '/reward/allocate', { reward_uid: reward, to_user_uid: user, amount: '12.5', nonce: 1 })).body.data.uid;
    const alloc2 = (await v1('POST', '/reward/allocation', '/reward/allocation', { reward_uid: reward, to_user_uid: user, amount: 1, nonce: 'two' })).body.data
      .uid;
    await v1('GET', '/reward/allocate/:uid', `/reward/allocate/${alloc}`);
    await v1('GET', '/reward/allocation/:uid', `/reward/allocation/${alloc2}`);
    await v1('GET', '/reward/allocate', `/reward/allocate?user_uid=${user}`);
    await v1('GET', '/reward/allocation', `/reward/allocation?user_uid=${user}`);
    await v1('GET', '/reward/balance', `/reward/balance?reward_uid=${reward}&user_uid=${user}`);
    await waitFor(
      'allocations done',
      async () =>
        (await api.get(`/reward/allocate/${alloc}`)).body.data.status === 'done' && (await api.get(`/reward/allocate/${alloc2}`)).body.data.status === 'done',
      30_000,
    );
    const claim = (
      await v1('POST', '/reward/claim', '/reward/claim', { reward_uid: reward, from_user_uid: user, to_address: '0x000000000000000000000000000000000000dEaD' })
    ).body.data.uid;
    await v1('GET', '/reward/claim/:uid', `/reward/claim/${claim}`);
    await v1('GET', '/reward/claim', `/reward/claim?user_uid=${user}`);
    await waitFor('claimed', async () => (await api.get(`/reward/claim/${claim}`)).body.data.status === 'done', 30_000);
    await v1('GET', '/reward/claim/:uid', `/reward/claim/${claim}`);
    await admin('POST', '/apps/:uid/rewards/:reward/withdraw', `/apps/${app.uid}/rewards/${reward}/withdraw`);

    // Items of an ERC-1155 collection: each route, before and after the chain.
    const itemColl = (
      await admin('POST', '/apps/:uid/collections', `/apps/${app.uid}/collections`, {
        name: 'Potions',
        symbol: 'POT',
        standard: 'ERC1155',
        editable_assets: true,
      })
    ).body.data.uid;
    await waitFor('item collection deployed', async () => (await api.get(`/collection/${itemColl}`)).body.data.status === 'deployed', 30_000);
    const potion = { name: 'Potion', image_url: 'https://example.com/p.png', store_image_on_ipfs: false };
    const item = (await v1('POST', '/item', '/item', { collection_uid: itemColl, item_external_id: 'p1', max_supply: '9007199254740993', data: potion })).body
      .data.uid;
    await v1('GET', '/item', `/item?collection_uid=${itemColl}`);
    await v1('PUT', '/item/:uid', `/item/${item}`, { data: { name: 'Potion+', image_url: 'https://example.com/p.png' } });
    const itemMint = (await v1('POST', '/item/mint', '/item/mint', { item_uid: item, to_user_uid: user, amount: 3, nonce: 'm1' })).body.data.uid;
    await waitFor('item minted', async () => (await api.get(`/item/mint/${itemMint}`)).body.data.status === 'done', 30_000);
    await v1('GET', '/item/:uid', `/item/${item}`);
    await v1('GET', '/item/mint/:uid', `/item/mint/${itemMint}`);
    await v1('GET', '/item/mint', `/item/mint?user_uid=${user}`);
    await v1('GET', '/item/balance', `/item/balance?item_uid=${item}&user_uid=${user}`);
    await v1('GET', '/item/balance', `/item/balance?user_uid=${user}`);
    await v1('POST', '/item/transfer', '/item/transfer', {
      item_uid: item,
      from_user_uid: user,
      to_address: '0x000000000000000000000000000000000000dEaD',
      amount: 9,
    }); // 400
    const itemTransfer = (
      await v1('POST', '/item/transfer', '/item/transfer', {
        item_uid: item,
        from_user_uid: user,
        to_address: '0x000000000000000000000000000000000000dEaD',
        amount: 1,
      })
    ).body.data.uid;
    const itemBurn = (await v1('POST', '/item/burn', '/item/burn', { item_uid: item, from_user_uid: user, amount: '1' })).body.data.uid;
    await waitFor(
      'item transfer and burn done',
      async () =>
        (await api.get(`/item/transfer/${itemTransfer}`)).body.data.status === 'done' && (await api.get(`/item/burn/${itemBurn}`)).body.data.status === 'done',
      30_000,
    );
    await v1('GET', '/item/transfer/:uid', `/item/transfer/${itemTransfer}`);
    await v1('GET', '/item/transfer', `/item/transfer?user_uid=${user}`);
    await v1('GET', '/item/burn/:uid', `/item/burn/${itemBurn}`);
    await v1('GET', '/item/burn', `/item/burn?user_uid=${user}`);

    // Webhooks: created (201, with its secret), changed (200), events, attempts, redelivery.
    await admin('PUT', '/apps/:uid/webhook', `/apps/${app.uid}/webhook`, { url: hookUrl });
    await admin('PUT', '/apps/:uid/webhook', `/apps/${app.uid}/webhook`, { events: ['asset.minted'] });
    await admin('GET', '/apps/:uid/webhook', `/apps/${app.uid}/webhook`);
    await v1('POST', '/asset', '/asset', assetBody('a3'));
    const events = await waitFor(
      'an event delivered',
      async () => {
        const r = await operator.get(`/apps/${app.uid}/webhook/events`);
        return r.body.data.some((d: any) => d.status === 'delivered') ? r : null;
      },
      30_000,
    );
    conforms('GET', '/admin/v1/apps/:uid/webhook/events', events);
    const eventId = events.body.data.find((d: any) => d.status === 'delivered').event_id;
    await admin('GET', '/apps/:uid/webhook/events/:id/attempts', `/apps/${app.uid}/webhook/events/${eventId}/attempts`);
    await admin('POST', '/apps/:uid/webhook/events/:id/redeliver', `/apps/${app.uid}/webhook/events/${eventId}/redeliver`);

    // Chains: the operator's view and tools (a settled transaction cannot be cancelled: 409).
    const chainId = t.svc.runtimes[0].spec.id;
    await admin('GET', '/chains', '/chains');
    await admin('GET', '/chains/:chain_id', `/chains/${chainId}`);
    await admin('GET', '/chains/:chain_id/transactions', `/chains/${chainId}/transactions?stuck=false`);
    await admin('POST', '/chains/:chain_id/resync', `/chains/${chainId}/resync`);
    await admin('POST', '/chains/:chain_id/verify', `/chains/${chainId}/verify`, {});
    const settled = await t.svc.ctx.db.selectFrom('chain_txs').select('id').where('kind', '=', 'asset.mint').where('handled', '=', 1).executeTakeFirstOrThrow();
    const refused = await admin('POST', '/chains/:chain_id/transactions/:id/cancel', `/chains/${chainId}/transactions/${settled.id}/cancel`);
    assert.equal(refused.status, 409, refused.raw);
    await admin('GET', '/chains/:chain_id', '/chains/424242'); // 404
    // Custody: a wallet export (the user has a wallet since the mint) and the audit log it lands in.
    const recipient = Buffer.alloc(32, 7).toString('base64url');
    await admin('POST', '/apps/:uid/users/:user/wallet-export', `/apps/${app.uid}/users/${user}/wallet-export`, { recipient_public_key: recipient });
    await admin('POST', '/apps/:uid/users/:user/wallet-export', `/apps/${app.uid}/users/${user}/wallet-export`, { recipient_public_key: 'short' }); // 400
    await admin('GET', '/audit', '/audit');
    await admin('GET', '/audit/verify', '/audit/verify');
    await admin('GET', '/apps/:uid/users', `/apps/${app.uid}/users`);

    // Failures, each in its documented envelope.
    await v1('POST', '/user', '/user', { email: 'not an email' }); // 400
    await v1('GET', '/user/:uid', '/user/999999999999'); // 404
    await v1('POST', '/user', '/user', 'not json'); // 400
    await api.call('POST', '/user', '{}', { 'Content-Type': 'text/plain' }).then((r) => conforms('POST', '/v1/user', r)); // 415
    await api.call('POST', '/user', {}, { 'Idempotency-Key': 'docs-1' }).then((r) => conforms('POST', '/v1/user', r));
    await api.call('POST', '/user', { email: 'x@example.com' }, { 'Idempotency-Key': 'docs-1' }).then((r) => conforms('POST', '/v1/user', r)); // 422
    await admin('GET', '/apps/:uid/collections', '/apps/999999999999/collections'); // 404
    await admin('POST', '/apps', '/apps', { name: '' }); // 400
    await new ApiClient(`${base}/admin/v1`, undefined, 'wrong-token').get('/apps').then((r) => conforms('GET', '/admin/v1/apps', r)); // 401
    const stranger = new ApiClient(`${base}/v1`, 'mw_nope', 'x.y.z');
    await stranger.get(`/user/${user}`).then((r) => conforms('GET', '/v1/user/:uid', r)); // 401
    let limited: ApiResponse | null = null;
    for (let i = 0; i < 40 && !limited; i++) {
      const r = await stranger.get(`/user/${user}`);
      if (r.status === 429) limited = r;
    }
    assert.ok(limited, 'failed authentications are limited');
    conforms('GET', '/v1/user/:uid', limited);
    assert.ok(newApp.api_secret);

    for (const s of ['201', '200', '400', '401', '404', '415', '422', '429'])
      assert.ok(
        [...checked].some((c) => c.endsWith(` ${s}`)),
        `no ${s} answer checked`,
      );
    const routes = new Set([...checked].map((c) => c.split(' ').slice(0, 2).join(' ')));
    assert.deepEqual(
      Object.keys(ROUTE_DOCS).filter((k) => !routes.has(k)),
      [],
      'every documented route was exercised',
    );
  });

  it('gives openapi-typescript the types a client imports, which real answers satisfy', async () => {
    assert.ok(answers.asset && answers.assets && answers.user, 'the real answers of the test above');
    const dir = tempDir('mintworks-openapi-');
    fs.writeFileSync(path.join(dir, 'api.d.ts'), astToString(await openapiTS(JSON.stringify(doc))));
    // A small client: typed by operation and by component, and the real answers as literals of those types.
    fs.writeFileSync(
      path.join(dir, 'client.ts'),
      [
        "import type { components, operations, paths } from './api.js';",
        "type Asset = components['schemas']['Asset'];",
        "type Ok<R> = R extends { responses: { 200: { content: { 'application/json': infer B } } } } ? B : never;",
        `export const asset: Ok<operations['getAsset']> = ${JSON.stringify(answers.asset)};`,
        `export const assets: Ok<operations['listAssets']> = ${JSON.stringify(answers.assets)};`,
        `export const user: Ok<operations['getUser']> = ${JSON.stringify(answers.user)};`,
        'export const minted: Asset = asset.data;',
        "export const created: operations['createAsset']['responses'][201]['content']['application/json']['data']['uid'] = '730018264405';",
        "export const failed: operations['getAsset']['responses'][404]['content']['application/json'] = { success: false, error: { type: 'client_error', detail: { code: 'not_found', message: 'Not found.' } } };",
        "export type AssetPath = paths['/v1/asset/{uid}']['get'];",
      ].join('\n'),
    );
    // And a wrong one must not compile: the check can fail.
    fs.writeFileSync(path.join(dir, 'wrong.ts'), "import type { components } from './api.js';\nexport const a: components['schemas']['Asset'] = { uid: 1 };\n");
    const tsc = (file: string) =>
      spawnSync(
        process.execPath,
        [require.resolve('typescript/bin/tsc'), '--noEmit', '--strict', '--skipLibCheck', '--target', 'es2022', '--module', 'nodenext', file],
        { cwd: dir, encoding: 'utf8' },
      );
    const good = tsc('client.ts');
    assert.equal(good.status, 0, good.stdout + good.stderr);
    const bad = tsc('wrong.ts');
    assert.notEqual(bad.status, 0, 'a wrong literal fails to compile');
    assert.match(bad.stdout, /wrong\.ts.*not assignable/);
  });
});
