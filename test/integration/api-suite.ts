// The public API against a real service (HTTP + workers + embedded anvil), run once per database.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT } from 'jose';
import { createPublicClient, http, parseAbi } from 'viem';
import { waitUntilBlockedBy } from '../helpers/pg-blocking.js';
import { ApiClient, waitFor, type ApiResponse } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { AssetIntake, writeCreates, type AssetParams, type CreateRequest } from '../../src/services/assets/create.js';
import { newUid } from '../../src/util/ids.js';
import { requestWallets, walletJobHandler } from '../../src/services/users/wallets.js';
import { kindOn, MINT_JOB, WALLET_JOB } from '../../src/jobs/kinds.js';
import type { Job } from '../../src/jobs/queue.js';
import type { Tx } from '../../src/store/db.js';
import { mintJobHandler } from '../../src/services/assets/mint-job.js';
import { mintsWaiting } from '../../src/services/collections/collections.js';
import { DEPLOYMENT_WAIT_MS, deferUntilDeployed } from '../../src/services/collections/contract-deploy.js';

const erc721 = parseAbi([
  'function ownerOf(uint256) view returns (address)',
  'function tokenURI(uint256) view returns (string)',
  'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
]);

const assetBody = (user_uid: string, collection_uid: string, over: Record<string, unknown> = {}, data: Record<string, unknown> = {}) => ({
  user_uid,
  collection_uid,
  asset_external_id: `ext-${Math.random().toString(36).slice(2)}`,
  sale_price_in_usd: 9.99,
  data: {
    name: `Sword ${Math.random().toString(36).slice(2, 7)}`,
    unique_name: true,
    image_url: 'https://example.com/sword.png',
    store_image_on_ipfs: false,
    ...data,
  },
  ...over,
});

export function apiSuite(db: 'sqlite' | 'postgres'): void {
  describe(`public API v1 on ${db}`, () => {
    let t: TestService;
    let app: Awaited<ReturnType<TestService['newApp']>>;
    let other: Awaited<ReturnType<TestService['newApp']>>;
    let collection: string;

    before(async () => {
      t = await startTestService(db);
      [app, other] = await Promise.all([t.newApp(), t.newApp()]);
      collection = await t.newCollection(app.uid, true);
    });
    after(async () => {
      await t?.stop();
    });

    const rpc = () => createPublicClient({ transport: http(t.svc.chain!.rpcUrl) });

    describe('auth and envelope', () => {
      it('401 without headers, with a wrong secret, an expired token, alg none; message is the last key', async () => {
        const noAuth = await new ApiClient(t.base).get('/user/123456789012');
        assert.equal(noAuth.status, 401);
        assert.equal(noAuth.body.success, false);
        assert.equal(noAuth.body.error.type, 'client_error');
        assert.deepEqual(Object.keys(noAuth.body.error.detail).at(-1), 'message');

        const wrong = await new SignJWT({ resource: '*', action: '*', user_id: '*' })
          .setProtectedHeader({ alg: 'HS256' })
          .sign(new TextEncoder().encode('x'.repeat(43)));
        assert.equal((await new ApiClient(t.base, app.apiKey, wrong).get('/user/123456789012')).status, 401);

        const expired = await new SignJWT({ resource: '*', action: '*', user_id: '*' })
          .setProtectedHeader({ alg: 'HS256' })
          .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
          .sign(new TextEncoder().encode(app.apiSecret));
        const exp = await new ApiClient(t.base, app.apiKey, expired).get('/user/123456789012');
        assert.equal(exp.status, 401);
        assert.match(exp.body.error.detail.message, /expired/);

        const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
        const none = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ resource: '*', action: '*', user_id: '*' })}.`;
        assert.equal((await new ApiClient(t.base, app.apiKey, none).get('/user/123456789012')).status, 401);

        const otherKeyClaim = await new SignJWT({ api_key: other.apiKey }).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(app.apiSecret));
        assert.equal((await new ApiClient(t.base, app.apiKey, otherKeyClaim).get('/user/123456789012')).status, 401);

        const unknownKey = await new ApiClient(t.base, 'mw_nope', app.api.token).get('/user/123456789012');
        assert.equal(unknownKey.status, 401);
      });

      it('a token with exp in the future and one without exp are both valid', async () => {
        const fresh = await new SignJWT({ resource: '*', action: '*', user_id: '*' })
          .setProtectedHeader({ alg: 'HS256' })
          .setExpirationTime(Math.floor(Date.now() / 1000) + 60)
          .sign(new TextEncoder().encode(app.apiSecret));
        const r = await new ApiClient(t.base, app.apiKey, fresh).post('/user', {});
        assert.equal(r.status, 201);
      });

      it('unknown routes, GET /user and GET /user/ answer 404 Not Found in the envelope', async () => {
        for (const p of ['/nope', '/user', '/user/']) {
          const r = await app.api.get(p);
          assert.equal(r.status, 404, p);
          assert.deepEqual(r.body, { success: false, error: { type: 'client_error', detail: { code: 'not_found', message: 'Not Found' } } });
        }
      });

      it('collapses // in paths and ignores unknown query parameters (api_key/api_secret in the query)', async () => {
        const u = await app.api.post('/user', {});
        const r = await app.api.get(`//user/${u.body.data.uid}?api_key=${app.apiKey}&api_secret=${app.apiSecret}`);
        assert.equal(r.status, 200);
        assert.equal(r.body.data.uid, u.body.data.uid);
      });

      it('/health reports ready with store, chain and relayers; /openapi.json documents the API', async () => {
        const h = await (await fetch(`${t.svc.url}/health`)).json();
        assert.equal(h.ready, true);
        assert.equal(h.store, db);
        assert.equal(h.chain.chain_id, 31337);
        assert.equal(h.relayers.length, 2);
        const doc = await (await fetch(`${t.svc.url}/openapi.json`)).json();
        assert.ok(doc.paths['/v1/asset'].post.requestBody, 'POST /v1/asset documented from its schema');
        assert.ok(doc.paths['/v1/user'].post);
        assert.equal((await fetch(`${t.svc.url}/docs`)).status, 200);
        const metrics = await (await fetch(`${t.svc.url}/metrics`)).text();
        assert.match(metrics, /mintworks_http_request_duration_seconds_count\{method="GET",route="\/v1\/user\/:uid",status="\d+"\} \d+/);
        assert.match(metrics, /mintworks_chain_block_number \d+/);
        assert.match(metrics, /mintworks_chain_unconfirmed_transactions \d+/);
        assert.ok(!metrics.includes(app.apiKey), 'no credentials in metrics');
      });

      it('a body that is not JSON answers 415, one over 1 MiB 413, both in the envelope', async () => {
        const plain = await app.api.call('POST', '/user', 'hi', { 'Content-Type': 'text/plain' });
        assert.equal(plain.status, 415);
        assert.equal(plain.body.error.detail.code, 'unsupported_media_type');
        const big = await app.api.post('/user', { email: `${'a'.repeat(1_100_000)}@example.com` });
        assert.equal(big.status, 413);
        assert.deepEqual(big.body.error, { type: 'client_error', detail: { code: 'payload_too_large', message: 'Request body is too large.' } });
      });

      it('malformed JSON answers 400 in the envelope', async () => {
        const r = await app.api.call('POST', '/user', '{"email":');
        assert.equal(r.status, 400);
        assert.equal(r.body.success, false);
      });
    });

    describe('users', () => {
      it('creates with an empty JSON body and returns a 12-digit uid with 201', async () => {
        const r = await app.api.call('POST', '/user', '');
        assert.equal(r.status, 201);
        assert.match(r.body.data.uid, /^[1-9]\d{11}$/);
        assert.deepEqual(Object.keys(r.body), ['success', 'data']);
      });

      it('GET /user/{uid} returns the User object; wallets empty until the first mint', async () => {
        const { body } = await app.api.post('/user', { email: 'Alice@Example.com', user_external_id: 'alice-1' });
        const r = await app.api.get(`/user/${body.data.uid}`);
        assert.equal(r.status, 200);
        assert.deepEqual(Object.keys(r.body.data), ['uid', 'created_at', 'email', 'user_external_id', 'wallets']);
        assert.equal(r.body.data.email, 'Alice@Example.com');
        assert.deepEqual(r.body.data.wallets, []);
        assert.match(r.body.data.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
        assert.equal((await app.api.get('/user?email=Alice@Example.com')).body.data.uid, body.data.uid);
        assert.equal((await app.api.get('/user?user_external_id=alice-1')).body.data.uid, body.data.uid);
        assert.equal((await app.api.get('/user?client_id=alice-1')).body.data.uid, body.data.uid);
      });

      it('lookups that find nothing answer 200 with data null', async () => {
        assert.deepEqual((await app.api.get('/user?email=nobody@example.com')).body, { success: true, data: null });
        assert.deepEqual((await app.api.get('/user?user_external_id=nobody')).body, { success: true, data: null });
      });

      it('invalid email: 400 validation_error on field email with the exact message', async () => {
        const r = await app.api.post('/user', { email: 'not-an-email' });
        assert.equal(r.status, 400);
        assert.deepEqual(r.body, {
          success: false,
          error: { type: 'validation_error', detail: { code: 'invalid', field_name: 'email', message: 'Enter a valid email address.' } },
        });
      });

      it('duplicate email or external id: 400 client_error "User already exists."; nulls mean absent', async () => {
        await app.api.post('/user', { email: 'dup@example.com', user_external_id: null });
        const r = await app.api.post('/user', { email: 'dup@example.com' });
        assert.equal(r.status, 400);
        assert.equal(r.body.error.type, 'client_error');
        assert.equal(r.body.error.detail.message, 'User already exists.');
        await app.api.post('/user', { user_external_id: 'dup-ext' });
        assert.equal((await app.api.post('/user', { user_external_id: 'dup-ext', email: null })).body.error.detail.message, 'User already exists.');
        // unique per App, not globally
        assert.equal((await other.api.post('/user', { email: 'dup@example.com' })).status, 201);
      });

      it('unknown uid and another App\'s uid: 404 "User not found."', async () => {
        const mine = (await app.api.post('/user', {})).body.data.uid;
        for (const r of [await app.api.get('/user/999999999999'), await app.api.get('/user/abc'), await other.api.get(`/user/${mine}`)]) {
          assert.equal(r.status, 404);
          assert.deepEqual(r.body.error, { type: 'client_error', detail: { code: 'not_found', message: 'User not found.' } });
        }
      });
    });

    describe('collections and assets', () => {
      it('GET /collection/{uid} returns the deployed Collection; another App gets 404', async () => {
        const r = await app.api.get(`/collection/${collection}`);
        assert.equal(r.status, 200);
        const c = r.body.data;
        assert.deepEqual(Object.keys(c), [
          'uid',
          'name',
          'created_at',
          'status',
          'type',
          'editable_assets',
          'contract_address',
          'symbol',
          'description',
          'external_url',
          'explorer_url',
          'chain',
          'network',
          'chain_id',
          // The collection options: additions after the hosted service's keys, which keep their order.
          'royalty_receiver',
          'royalty_bps',
          'soulbound',
          'contract_uri',
        ]);
        assert.equal(c.status, 'deployed');
        assert.equal(c.type, 'ERC721');
        assert.equal(c.editable_assets, true);
        assert.equal(c.chain_id, 31337);
        assert.equal(c.contract_address, c.contract_address.toLowerCase(), 'addresses are answered in lower case');
        assert.equal(c.network, 'Anvil', 'the configured chain name, as given');
        const o = await other.api.get(`/collection/${collection}`);
        assert.equal(o.status, 404);
        assert.equal(o.body.error.detail.message, 'Collection not found.');
      });

      it('an airdrop to new users: each gets one wallet job, one wallet (its own key) and one event, and its assets', async () => {
        const users = await Promise.all(Array.from({ length: 24 }, () => app.api.post('/user', {}).then((r) => r.body.data.uid as string)));
        // Two assets each, all at once: creates of several users share a group, and a user's second
        // create finds the wallet job its first one queued (in its group, or in the database).
        const created = await Promise.all(users.flatMap((u) => [0, 1].map(() => app.api.post('/asset', assetBody(u, collection)))));
        for (const c of created) assert.equal(c.status, 201, c.raw);
        const assets = await waitFor(
          'the airdrop minted',
          async () => {
            const all = await Promise.all(created.map((c) => app.api.get(`/asset/${c.body.data.uid}`).then((r) => r.body.data)));
            return all.every((a) => a.is_minted) ? all : null;
          },
          60_000,
        );
        for (const u of users) {
          const wallets = (await app.api.get(`/user/${u}`)).body.data.wallets;
          assert.equal(wallets.length, 1, u);
          assert.equal(wallets[0].address, t.svc.ctx.keys.user(u).address.toLowerCase(), u);
          const theirs = assets.filter((a) => a.owner_user_uid === u);
          assert.equal(theirs.length, 2, u);
          for (const a of theirs) assert.equal(a.owner_address, wallets[0].address, u);
        }
        const db = t.svc.ctx.db;
        const jobs = await db.selectFrom('jobs').select('ref').where('kind', '=', 'wallet.create').where('ref', 'in', users).execute();
        assert.deepEqual(jobs.map((j) => j.ref).sort(), [...users].sort(), 'one wallet job per user');
        const events = await db.selectFrom('events').select('payload').where('app_uid', '=', app.uid).where('type', '=', 'user.wallet_created').execute();
        const walletEvents = events.map((e) => JSON.parse(e.payload).user.uid as string).filter((u) => users.includes(u));
        assert.deepEqual(walletEvents.sort(), [...users].sort(), 'one user.wallet_created per user');
        // A mint job that read its asset before the wallet job finished asks for the wallet after: the
        // wallet is there now, so no second job is queued and the mint need not wait.
        const chainId = t.svc.ctx.installation.homeChainId;
        const asked = await requestWallets(t.svc.ctx, db, [{ userUid: users[0], chainId }]);
        assert.deepEqual(asked, { queue: [], made: [{ userUid: users[0], chainId }] });
        const again = await db.selectFrom('jobs').select('ref').where('kind', '=', 'wallet.create').where('ref', '=', users[0]).execute();
        assert.equal(again.length, 1, 'still one wallet job');
      });

      // PostgreSQL runs the two transactions side by side (SQLite takes them one at a time): a wallet job
      // that woke its user's mints just before one of them deferred itself for that wallet left it to
      // wait out the whole delay.
      if (db === 'postgres')
        it("a wallet job finishing while a mint defers itself for that wallet waits for the mint's transaction, then wakes it", async () => {
          const ctx = t.svc.ctx;
          const store = ctx.db;
          const chainId = ctx.installation.homeChainId;
          const user = (await app.api.post('/user', {})).body.data.uid as string;
          // Both jobs as workers hold them: running, with a lease the service's own workers leave alone.
          const now = Date.now();
          const held = { group_key: null, payload: '{}', status: 'running' as const, run_at: now, attempts: 1, max_attempts: 5, lease_until: now + 600_000 };
          const row = { ...held, locked_by: 'test', last_error: null, created_at: now, updated_at: now };
          const [walletRow, mintRow] = await store
            .insertInto('jobs')
            .values([
              { ...row, kind: WALLET_JOB, ref: user },
              { ...row, kind: kindOn(ctx, MINT_JOB, chainId), ref: newUid(), group_key: user },
            ])
            .returning(['id'])
            .execute();
          const walletJob = { id: walletRow.id, kind: WALLET_JOB, ref: user, groupKey: null, payload: {}, attempts: 1, maxAttempts: 5 };
          const { finished } = await store.transaction().execute(async (tx) => {
            assert.deepEqual(await requestWallets(ctx, tx, [{ userUid: user, chainId }]), { queue: [], made: [] }, 'its job is running');
            // The wallet job finishes now, on another connection.
            let done = false;
            const finished = walletJobHandler(ctx)
              .handle([walletJob])
              .then(() => {
                done = true;
              });
            await waitUntilBlockedBy('the wallet job waiting for this transaction', tx, store);
            assert.equal(done, false, 'the wallet job waits');
            await ctx.queue.deferMany(tx, [{ id: mintRow.id, attempts: 1 }], 60_000);
            return { finished };
          });
          await finished;
          const mint = await store.selectFrom('jobs').select(['status', 'run_at']).where('id', '=', mintRow.id).executeTakeFirstOrThrow();
          assert.equal(mint.status, 'queued');
          assert.ok(Number(mint.run_at) <= Date.now(), 'the mint was woken, not left to wait 60 s');
          assert.equal((await app.api.get(`/user/${user}`)).body.data.wallets.length, 1);
        });

      describe('mints waiting for their collection to deploy', () => {
        const store = () => t.svc.ctx.db;
        const chainCtx = () => t.svc.ctx.chains!.get(t.svc.ctx.installation.homeChainId)!;
        const waits = { table: 'collections', jobKind: MINT_JOB, lock: 'collectionDeployed' } as const;
        let user: string;
        before(async () => {
          // A user with a wallet already: their mints wait for nothing but the collection.
          user = (await app.api.post('/user', {})).body.data.uid;
          await minted((await app.api.post('/asset', assetBody(user, collection))).body.data.uid);
        });
        async function minted(asset: string): Promise<void> {
          await waitFor('asset minted', async () => (await app.api.get(`/asset/${asset}`)).body.data.is_minted, 30_000);
        }
        /** A collection of its own, deployed and then read as deploying again; its contract for its deployment's outcome. */
        async function deployingCollection(): Promise<{ uid: string; contract: string }> {
          const uid = await t.newCollection(app.uid);
          const c = await store().selectFrom('collections').select('contract_address').where('uid', '=', uid).executeTakeFirstOrThrow();
          await store().updateTable('collections').set({ status: 'deploying', contract_address: null }).where('uid', '=', uid).execute();
          return { uid, contract: c.contract_address! };
        }
        /**
         * An asset accepted in it, whose mint job the service's workers found waiting for the deployment
         * and deferred, then held as a worker holds a claimed job (running, leased far ahead).
         */
        async function heldMint(collectionUid: string): Promise<{ asset: string; job: Job<typeof MINT_JOB> }> {
          const created = await app.api.post('/asset', assetBody(user, collectionUid));
          assert.equal(created.status, 201, created.raw);
          const asset = created.body.data.uid as string;
          const kind = kindOn(t.svc.ctx, MINT_JOB, t.svc.ctx.installation.homeChainId);
          const deferred = await waitFor('its mint deferred', async () => {
            const j = await store()
              .selectFrom('jobs')
              .select(['id', 'run_at', 'max_attempts'])
              .where('kind', '=', kind)
              .where('ref', '=', asset)
              .where('status', '=', 'queued')
              .executeTakeFirst();
            return j && Number(j.run_at) > Date.now() ? j : null;
          });
          const taken = await store()
            .updateTable('jobs')
            .set({ status: 'running', attempts: 1, lease_until: Date.now() + 600_000, locked_by: 'test' })
            .where('id', '=', deferred.id)
            .where('status', '=', 'queued')
            .executeTakeFirst();
          assert.equal(Number(taken.numUpdatedRows), 1, 'held before the workers took it again');
          return {
            asset,
            job: { id: deferred.id, kind: MINT_JOB, ref: asset, groupKey: user, payload: { round: 1 }, attempts: 1, maxAttempts: deferred.max_attempts },
          };
        }
        /** What the deployment's outcome writes: the collection deployed, the mints waiting for it woken. */
        async function deploymentOutcome(tx: Tx, c: { uid: string; contract: string }): Promise<void> {
          await tx.updateTable('collections').set({ status: 'deployed', contract_address: c.contract }).where('uid', '=', c.uid).execute();
          await mintsWaiting(chainCtx())(tx, c.uid);
        }
        const jobRow = (id: number) => store().selectFrom('jobs').select(['status', 'run_at']).where('id', '=', id).executeTakeFirstOrThrow();

        it('a collection deployed after its mint was read: the mint is due at once, not in 5 s, and minted; one still deploying waits until its deployment wakes it', async () => {
          const [meanwhile, later] = await Promise.all([deployingCollection(), deployingCollection()]);
          const m1 = await heldMint(meanwhile.uid);
          const m2 = await heldMint(later.uid);
          // Both were read deploying; then the first one's deployment committed (and woke nothing: its mint is claimed).
          await store()
            .transaction()
            .execute((tx) => deploymentOutcome(tx, meanwhile));
          const before = Date.now();
          await deferUntilDeployed(chainCtx(), waits, [
            { job: m1.job, uid: meanwhile.uid },
            { job: m2.job, uid: later.uid },
          ]);
          const r1 = await jobRow(m1.job.id);
          assert.ok(Number(r1.run_at) <= Date.now(), `due in ${Number(r1.run_at) - Date.now()} ms`);
          const r2 = await jobRow(m2.job.id);
          assert.equal(r2.status, 'queued');
          assert.ok(Number(r2.run_at) >= before + DEPLOYMENT_WAIT_MS, 'a collection still deploying: its mint waits');
          await minted(m1.asset);
          // Its deployment's outcome wakes it.
          await store()
            .transaction()
            .execute((tx) => deploymentOutcome(tx, later));
          assert.ok(Number((await jobRow(m2.job.id)).run_at) <= Date.now(), 'woken by the deployment');
          await minted(m2.asset);
        });

        // PostgreSQL runs the two transactions side by side (SQLite takes them one at a time).
        if (db === 'postgres')
          it("a deployment's outcome committing while a mint defers itself: the mint waits for it, reads the collection deployed, and is due at once", async () => {
            const c = await deployingCollection();
            const m = await heldMint(c.uid);
            const { handled } = await store()
              .transaction()
              .execute(async (tx) => {
                await deploymentOutcome(tx, c);
                // The mint reads its asset on another connection (the collection deploying: not committed
                // yet) and goes to defer itself.
                let done = false;
                const handled = mintJobHandler(chainCtx())
                  .handle([m.job])
                  .then(() => {
                    done = true;
                  });
                await waitUntilBlockedBy('the mint job waiting for this transaction', tx, store());
                assert.equal(done, false, 'the mint waits');
                return { handled };
              });
            await handled;
            const row = await jobRow(m.job.id);
            assert.ok(Number(row.run_at) <= Date.now(), `due in ${Number(row.run_at) - Date.now()} ms, not left to wait ${DEPLOYMENT_WAIT_MS} ms`);
            await minted(m.asset);
          });
      });

      it("mints an asset into the user's new wallet: is_minted within 10 s and ownerOf on chain is the wallet", async () => {
        const user = (await app.api.post('/user', { email: 'minter@example.com' })).body.data.uid;
        const body = assetBody(
          user,
          collection,
          {},
          {
            name: 'Excalibur',
            description: 'A sword',
            external_url: 'https://example.com/x',
            attributes: [
              { trait_type: 'power', value: 9, display_type: 'boost_number' },
              { trait_type: 'kind', value: 'blade' },
            ],
          },
        );
        const created = await app.api.post('/asset', body);
        assert.equal(created.status, 201, created.raw);
        const uid = created.body.data.uid;
        // Minting is quick on the embedded chain, so the first read may already see it minted;
        // until then the asset is not transferable and has no token id.
        const before = (await app.api.get(`/asset/${uid}`)).body.data;
        if (!before.is_minted) {
          assert.equal(before.is_transferable, false);
          assert.equal(before.token_id, null);
        }

        const started = Date.now();
        const a = await waitFor(
          'asset minted',
          async () => {
            const r = (await app.api.get(`/asset/${uid}`)).body.data;
            return r.is_minted ? r : null;
          },
          10_000,
        );
        assert.ok(Date.now() - started < 10_000);
        assert.deepEqual(Object.keys(a), [
          'uid',
          'name',
          'asset_external_id',
          'collection_uid',
          'collection_name',
          'created_at',
          'token_id',
          'is_minted',
          'is_burned',
          'is_transferring',
          'is_transferable',
          'is_editing',
          'mint_for_user_uid',
          'mint_for_address',
          'owner_user_uid',
          'owner_address',
          'explorer_url',
          'token_uri',
          'sale_price_in_usd',
          'metadata',
        ]);
        assert.equal(a.is_transferable, true);
        assert.equal(a.owner_user_uid, user);
        assert.equal(a.sale_price_in_usd, 9.99);
        assert.deepEqual(a.metadata, {
          name: 'Excalibur',
          image: 'https://example.com/sword.png',
          org_image_url: 'https://example.com/sword.png',
          original_id: uid,
          description: 'A sword',
          external_url: 'https://example.com/x',
          attributes: [
            { trait_type: 'power', value: 9, display_type: 'boost_number' },
            { trait_type: 'kind', value: 'blade' },
          ],
        });

        const wallet = (await app.api.get(`/user/${user}`)).body.data.wallets[0];
        assert.equal(wallet.address, a.owner_address);
        assert.equal(wallet.chain_id, 31337);
        const coll = (await app.api.get(`/collection/${collection}`)).body.data;
        const owner = await rpc().readContract({ address: coll.contract_address, abi: erc721, functionName: 'ownerOf', args: [BigInt(a.token_id)] });
        assert.equal(owner.toLowerCase(), wallet.address);
        // token_uri on chain = the API's token_uri, and it serves the metadata document
        const uri = await rpc().readContract({ address: coll.contract_address, abi: erc721, functionName: 'tokenURI', args: [BigInt(a.token_id)] });
        assert.equal(uri, a.token_uri);
        assert.deepEqual(await (await fetch(uri)).json(), a.metadata);

        // explorer_url links resolve on the embedded chain's minimal explorer
        assert.equal((await (await fetch(a.explorer_url)).json()).owner.toLowerCase(), wallet.address);
        assert.equal((await (await fetch(wallet.explorer_url)).json()).balance_wei, '0');
        const list = (await app.api.get(`/asset?user_uid=${user}`)).body.data;
        assert.deepEqual(
          list.map((x: any) => x.uid),
          [uid],
        );
        assert.equal((await other.api.get(`/asset/${uid}`)).status, 404);
      });

      it('unique_name false appends #<token id>; unique_name true refuses a taken name', async () => {
        const user = (await app.api.post('/user', {})).body.data.uid;
        const a1 = (await app.api.post('/asset', assetBody(user, collection, {}, { name: 'Potion', unique_name: false }))).body.data.uid;
        const a2 = (await app.api.post('/asset', assetBody(user, collection, {}, { name: 'Potion', unique_name: false }))).body.data.uid;
        const [n1, n2] = [(await app.api.get(`/asset/${a1}`)).body.data.name, (await app.api.get(`/asset/${a2}`)).body.data.name];
        assert.match(n1, /^Potion #\d+$/);
        assert.match(n2, /^Potion #\d+$/);
        assert.notEqual(n1, n2);

        assert.equal((await app.api.post('/asset', assetBody(user, collection, {}, { name: 'Shield', unique_name: true }))).status, 201);
        const dup = await app.api.post('/asset', assetBody(user, collection, {}, { name: 'Shield', unique_name: true }));
        assert.equal(dup.status, 400);
        assert.deepEqual(dup.body.error, { type: 'client_error', detail: { code: 'asset_name_exists', message: 'Asset with this name already exists' } });
        // the name taken by a non-unique asset counts too
        const taken = await app.api.post('/asset', assetBody(user, collection, {}, { name: n1, unique_name: true }));
        assert.equal(taken.body.error?.detail.message, 'Asset with this name already exists');
      });

      it('asset_external_id is unique per App', async () => {
        const user = (await app.api.post('/user', {})).body.data.uid;
        const body = assetBody(user, collection);
        assert.equal((await app.api.post('/asset', body)).status, 201);
        const again = await app.api.post('/asset', { ...body, data: { ...body.data, name: 'Other name' } });
        assert.equal(again.status, 400);
        assert.equal(again.body.error.type, 'client_error');
        assert.equal(again.body.error.detail.field_name, 'asset_external_id');
      });

      it('validation: every malformed field is reported, message last, nothing created', async () => {
        const user = (await app.api.post('/user', {})).body.data.uid;
        const countBefore = (
          await t.svc.ctx.db
            .selectFrom('assets')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n;
        const r = await app.api.post('/asset', {
          user_uid: user,
          collection_uid: collection,
          data: { name: '', unique_name: 'yes', image_url: 'ftp://x', attributes: [{ value: 1 }] },
          sale_price_in_usd: -1,
        });
        assert.equal(r.status, 400);
        assert.equal(r.body.error.type, 'validation_error');
        const details = r.body.error.detail as any[];
        assert.ok(Array.isArray(details));
        const fields = details.map((d) => d.field_name).sort();
        assert.deepEqual(
          fields,
          [
            'asset_external_id',
            'data.attributes.0.trait_type',
            'data.image_url',
            'data.name',
            'data.store_image_on_ipfs',
            'data.unique_name',
            'sale_price_in_usd',
          ].sort(),
        );
        for (const d of details) assert.equal(Object.keys(d).at(-1), 'message');
        const countAfter = (
          await t.svc.ctx.db
            .selectFrom('assets')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n;
        assert.equal(Number(countAfter), Number(countBefore));
      });

      it("unknown user or collection, or another App's: 404 and nothing created", async () => {
        const user = (await app.api.post('/user', {})).body.data.uid;
        const r1 = await app.api.post('/asset', assetBody('999999999999', collection));
        assert.equal(r1.status, 404);
        assert.equal(r1.body.error.detail.message, 'User not found.');
        const r2 = await app.api.post('/asset', assetBody(user, '999999999999'));
        assert.equal(r2.body.error.detail.message, 'Collection not found.');
        const r3 = await other.api.post('/asset', assetBody((await other.api.post('/user', {})).body.data.uid, collection));
        assert.equal(r3.status, 404);
        assert.deepEqual((await other.api.get(`/asset?user_uid=${user}`)).body, { success: true, data: [] });
        assert.deepEqual((await app.api.get('/asset?user_uid=999999999999')).body, { success: true, data: [] });
      });

      it('a new asset whose random uid is taken gets another one, not an error', async () => {
        const user = (await app.api.post('/user', {})).body.data.uid;
        const taken = (await app.api.post('/asset', assetBody(user, collection))).body.data.uid as string;
        const fresh = newUid();
        const draws = [taken, taken, fresh];
        const intake = new AssetIntake(t.svc.ctx, () => draws.shift() ?? newUid());
        const body = assetBody(user, collection) as unknown as AssetParams;
        const created = await intake.submit(app.uid, 'development', body);
        assert.equal(created.uid, fresh);
        assert.equal(draws.length, 0, 'drawn again twice');
        const read = await app.api.get(`/asset/${fresh}`);
        assert.equal(read.status, 200, read.raw);
        assert.equal(read.body.data.asset_external_id, body.asset_external_id);
        assert.equal((await app.api.get(`/asset/${taken}`)).body.data.asset_external_id !== body.asset_external_id, true, 'the first asset is untouched');
      });

      it('a group whose checks refuse some creates gives their token ids back: the accepted ones get consecutive ids', async () => {
        const user = (await app.api.post('/user', {})).body.data.uid as string;
        const otherUser = (await other.api.post('/user', {})).body.data.uid as string;
        const taken = assetBody(user, collection);
        assert.equal((await app.api.post('/asset', taken)).status, 201);
        const db = t.svc.ctx.db;
        const nextId = async () =>
          Number((await db.selectFrom('collections').select('next_token_id').where('uid', '=', collection).executeTakeFirstOrThrow()).next_token_id);
        const create = (appUid: string, body: Record<string, unknown>): CreateRequest => ({
          appUid,
          environment: 'development',
          uid: newUid(),
          params: body as unknown as AssetParams,
        });
        const write = (group: CreateRequest[]) => db.transaction().execute((tx) => writeCreates(t.svc.ctx, tx, group));
        const before = await nextId();
        // Refused between accepted ones: an unknown user, a taken external id, another App's request for
        // this collection (PostgreSQL reserves ids with the facts; that one must reserve none here).
        const group = [
          create(app.uid, assetBody(user, collection, {}, { unique_name: false })),
          create(app.uid, assetBody('999999999999', collection)),
          create(app.uid, assetBody(user, collection, {}, { unique_name: false })),
          create(app.uid, assetBody(user, collection, { asset_external_id: taken.asset_external_id })),
          create(other.uid, assetBody(otherUser, collection)),
          create(app.uid, assetBody(user, collection, {}, { unique_name: false })),
        ];
        const outcomes = await write(group);
        assert.deepEqual(
          outcomes.map((o) => o.ok),
          [true, false, true, false, false, true],
        );
        assert.equal(await nextId(), before + 3, 'the counter moved by the accepted ones only');
        const tokenIds = [];
        for (const i of [0, 2, 5]) {
          const a = (await app.api.get(`/asset/${group[i].uid}`)).body.data;
          assert.equal(a.name, `${group[i].params.data.name} #${before + tokenIds.length}`, 'the name carries the token id');
          tokenIds.push(Number((await db.selectFrom('assets').select('token_id').where('uid', '=', group[i].uid).executeTakeFirstOrThrow()).token_id));
        }
        assert.deepEqual(tokenIds, [before, before + 1, before + 2]);
        // A group refused whole takes nothing either.
        const refused = await write([create(app.uid, assetBody('999999999999', collection)), create(other.uid, assetBody(otherUser, collection))]);
        assert.deepEqual(
          refused.map((o) => o.ok),
          [false, false],
        );
        assert.equal(await nextId(), before + 3);
      });
    });

    describe("the creates' thread", () => {
      it('writes the creates; one that dies mid-burst loses none and writes none twice, creates go on meanwhile, and it is restarted', async () => {
        const thread = t.svc.creates!;
        assert.ok(thread, 'CREATES_THREAD is on by default');
        assert.deepEqual(thread.status(), { running: true, restarts: 0 });
        const user = (await app.api.post('/user', {})).body.data.uid as string;
        const bodies = Array.from({ length: 60 }, () => assetBody(user, collection, {}, { unique_name: false }));
        let burst: Promise<ApiResponse>[] = [];
        await t.svc.ctx.db.transaction().execute(async (tx) => {
          // Holds what every create needs, the collection's token counter (on SQLite: the write lock
          // itself), so the burst waits in the thread until it is gone.
          await tx
            .updateTable('collections')
            .set((eb) => ({ next_token_id: eb.ref('next_token_id') }))
            .where('uid', '=', collection)
            .execute();
          burst = bodies.map((b) => app.api.post('/asset', b));
          await waitFor('creates waiting in the thread', async () => thread.inFlightCount >= 10, 20_000, 5);
          await thread.terminate();
        });
        const answers = await Promise.all(burst);
        for (const a of answers) assert.ok(a.status === 201 || (a.status === 500 && a.body.error.type === 'server_error'), a.raw);
        assert.ok(answers.filter((a) => a.status === 500).length >= 10, 'the creates in the thread were answered 500');
        // While the thread is down (it restarts after a pause), creates are written on the main thread.
        const meanwhile = await app.api.post('/asset', assetBody(user, collection));
        assert.equal(meanwhile.status, 201, meanwhile.raw);
        // A create answered 500 may or may not have been written: sent again, it is written once.
        for (const [i, a] of answers.entries()) {
          if (a.status === 201) continue;
          const again = await app.api.post('/asset', bodies[i]);
          assert.ok(again.status === 201 || again.body.error.detail.code === 'asset_external_id_exists', again.raw);
        }
        const ids = bodies.map((b) => b.asset_external_id);
        const rows = await t.svc.ctx.db
          .selectFrom('assets')
          .select(['uid', 'asset_external_id'])
          .where('app_uid', '=', app.uid)
          .where('asset_external_id', 'in', ids)
          .execute();
        assert.deepEqual(rows.map((r) => r.asset_external_id).sort(), [...ids].sort(), 'every create written exactly once');
        for (const [i, a] of answers.entries()) if (a.status === 201) assert.equal(rows.find((r) => r.asset_external_id === ids[i])!.uid, a.body.data.uid);
        await waitFor('the thread restarted', async () => thread.status().running, 15_000, 50);
        assert.equal(thread.status().restarts, 1);
        assert.deepEqual((await (await fetch(`${t.svc.url}/health`)).json()).creates_thread, { running: true, restarts: 1 });
        const after = await app.api.post('/asset', assetBody(user, collection));
        assert.equal(after.status, 201, after.raw);
        assert.equal((await app.api.get(`/asset/${after.body.data.uid}`)).status, 200);
      });
    });

    describe('deposit', () => {
      it('creates the wallet and answers ERC-681 data; 404 for an unknown user', async () => {
        const user = (await app.api.post('/user', {})).body.data.uid;
        const r = await app.api.get(`/deposit?user_uid=${user}&collection_uid=${collection}`);
        assert.equal(r.status, 200);
        assert.deepEqual(Object.keys(r.body.data), ['network', 'chain_id', 'wallet_address', 'qr_code_data']);
        assert.equal(r.body.data.qr_code_data, `ethereum:${r.body.data.wallet_address}@31337`);
        assert.equal((await app.api.get(`/user/${user}`)).body.data.wallets[0].address, r.body.data.wallet_address);
        const events = await t.svc.ctx.db.selectFrom('events').select('type').where('app_uid', '=', app.uid).where('payload', 'like', `%${user}%`).execute();
        assert.deepEqual(
          events.map((e) => e.type),
          ['user.wallet_created'],
        );
        assert.equal((await app.api.get(`/deposit?user_uid=999999999999&collection_uid=${collection}`)).status, 404);
        assert.equal((await app.api.get(`/deposit?collection_uid=${collection}`)).status, 400);
        // Without collection_uid: the App's default chain (here the only one).
        for (const q of [`/deposit?user_uid=${user}`, `/deposit?user_uid=${user}&collection_uid=`]) {
          const d = await app.api.get(q);
          assert.equal(d.status, 200, d.raw);
          assert.deepEqual(d.body.data, r.body.data);
        }
      });
    });

    describe('volume', () => {
      it('200 assets created in a burst are all minted within 30 s, each token once on chain', async () => {
        const users = await Promise.all(Array.from({ length: 20 }, () => app.api.post('/user', {}).then((r) => r.body.data.uid as string)));
        const started = Date.now();
        const uids = await Promise.all(
          Array.from({ length: 200 }, (_, i) =>
            app.api.post('/asset', assetBody(users[i % users.length], collection, {}, { unique_name: false, name: 'Gem' })).then((r) => {
              assert.equal(r.status, 201, r.raw);
              return r.body.data.uid as string;
            }),
          ),
        );
        await waitFor(
          '200 minted',
          async () => {
            const n = await t.svc.ctx.db
              .selectFrom('assets')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('uid', 'in', uids)
              .where('mint_status', '=', 'minted')
              .executeTakeFirstOrThrow();
            return Number(n.n) === 200;
          },
          30_000,
          200,
        );
        const elapsed = Date.now() - started;
        assert.ok(elapsed < 30_000, `took ${elapsed} ms`);
        const coll = (await app.api.get(`/collection/${collection}`)).body.data;
        const logs = await rpc().getContractEvents({ address: coll.contract_address, abi: erc721, eventName: 'Transfer', fromBlock: 0n });
        const ids = new Map<bigint, number>();
        for (const l of logs) if (BigInt(l.args.from!) === 0n) ids.set(l.args.tokenId!, (ids.get(l.args.tokenId!) ?? 0) + 1);
        for (const uid of uids) {
          const a = (await app.api.get(`/asset/${uid}`)).body.data;
          assert.equal(ids.get(BigInt(a.token_id)), 1, `token ${a.token_id} minted once`);
        }
        process.stdout.write(`# 200-asset burst minted in ${elapsed} ms on ${db}\n`);
      });
    });
  });
}
