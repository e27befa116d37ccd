// Webhooks end to end (asset and item events): the real service (HTTP + workers + embedded anvil) sending
// to real HTTP receivers on 127.0.0.1 (OUTBOUND_ALLOW_PRIVATE=true), configured through the management
// API and the CLI, verified with the public `standardwebhooks` library and by recomputing our header.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { emitEvent } from '../../src/services/events.js';
import { createWalletClient, http as viemHttp, parseAbi, parseEther, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { ApiClient, freePort, waitFor } from '../helpers/env.js';
import { embeddedChain } from '../helpers/suite-chain.js';
import { startTestService, type TestService } from '../helpers/service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Received {
  headers: Record<string, string>;
  body: string;
  json: any;
  at: number;
}

/** A webhook receiver: records every request; `decide` answers with a status or leaves it hanging. */
class Receiver {
  readonly requests: Received[] = [];
  decide: (r: Received) => number | 'hang' = () => 200;
  hanging = 0;
  maxHanging = 0;
  private readonly held: http.ServerResponse[] = [];
  private waiters: { pred: (r: Received) => boolean; resolve: (r: Received) => void }[] = [];
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const rec: Received = {
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
        body,
        json: JSON.parse(body),
        at: Date.now(),
      };
      this.requests.push(rec);
      this.waiters = this.waiters.filter((w) => (w.pred(rec) ? (w.resolve(rec), false) : true));
      const d = this.decide(rec);
      if (d === 'hang') {
        this.hanging++;
        this.maxHanging = Math.max(this.maxHanging, this.hanging);
        res.on('close', () => this.hanging--);
        this.held.push(res);
      } else res.writeHead(d, { 'content-type': 'text/plain' }).end(`answer ${d}`);
    });
  });
  url = '';

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  /** The first request (already received or coming) matching `pred`; fails after `ms`. */
  next(pred: (r: Received) => boolean, ms: number, what: string): Promise<Received> {
    const seen = this.requests.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `${what}: nothing within ${ms} ms (received: ${this.requests.map((r) => `${r.json.event}#${r.headers['x-webhook-attempt']}`).join(', ') || 'none'})`,
            ),
          ),
        ms,
      );
      this.waiters.push({ pred, resolve: (r) => (clearTimeout(timer), resolve(r)) });
    });
  }

  async close(): Promise<void> {
    for (const r of this.held) r.destroy();
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

const isEvent = (type: string, attempt?: number, id?: string) => (r: Received) =>
  r.json.event === type && (attempt === undefined || r.headers['x-webhook-attempt'] === String(attempt)) && (id === undefined || r.json.event_id === id);

/** Verifies both signature schemes of a received request with `secret`, independently of our code. */
function assertSigned(r: Received, secret: string): void {
  const verified = new Webhook(secret).verify(r.body, r.headers) as { event_id: string };
  assert.equal(verified.event_id, r.headers['webhook-id']);
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const mac = createHmac('sha256', key).update(`${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`).digest('hex');
  for (const name of ['x-webook-signature', 'x-webhook-signature']) {
    const entries = r.headers[name].split(' ');
    assert.ok(
      entries.some((e) => e.endsWith(`,signature-${mac}`) && e.startsWith('key-')),
      `${name} carries the HMAC of this secret`,
    );
  }
}

export function webhookSuite(db: 'sqlite' | 'postgres'): void {
  describe(`webhooks end to end on ${db}`, () => {
    let t: TestService;
    let admin: ApiClient;
    const receivers: Receiver[] = [];
    const receiver = async () => {
      const r = await new Receiver().start();
      receivers.push(r);
      return r;
    };
    const setWebhook = async (appUid: string, body: Record<string, unknown>) => {
      const r = await admin.call('PUT', `/apps/${appUid}/webhook`, body);
      assert.ok(r.status === 200 || r.status === 201, r.raw);
      return r.body.data;
    };
    const mint = async (app: Awaited<ReturnType<TestService['newApp']>>, collection: string) => {
      const user = await app.api.post('/user', { email: `u${Math.random().toString(36).slice(2)}@example.com` });
      assert.equal(user.status, 201, user.raw);
      const asset = await app.api.post('/asset', {
        user_uid: user.body.data.uid,
        collection_uid: collection,
        asset_external_id: `ext-${Math.random().toString(36).slice(2)}`,
        data: { name: 'Sword', unique_name: false, image_url: 'https://example.com/sword.png', store_image_on_ipfs: false },
      });
      assert.equal(asset.status, 201, asset.raw);
      return { user: user.body.data.uid as string, asset: asset.body.data.uid as string };
    };

    before(async () => {
      t = await startTestService(db, { OUTBOUND_ALLOW_PRIVATE: 'true' });
      admin = new ApiClient(`${t.svc.url}/admin/v1`, undefined, t.svc.ctx.installation.operatorToken);
    });
    after(async () => {
      await t?.stop();
      await Promise.all(receivers.map((r) => r.close()));
    });

    it('a failed first attempt is sent again within 30 s with attempt 2 and the same id; wallet_created and minted both arrive, signed', async () => {
      const app = await t.newApp();
      const collection = await t.newCollection(app.uid, false);
      const rx = await receiver();
      const failedOnce = new Set<string>();
      rx.decide = (r) => (failedOnce.has(r.json.event_id) ? 200 : (failedOnce.add(r.json.event_id), 500));
      const created = await setWebhook(app.uid, { url: rx.url });
      assert.match(created.secret, /^whsec_/);
      assert.equal(created.url, rx.url);

      const { user, asset } = await mint(app, collection);
      for (const type of ['user.wallet_created', 'asset.minted']) {
        const first = await rx.next(isEvent(type, 1), 60_000, `${type} attempt 1`);
        const second = await rx.next(isEvent(type, 2, first.json.event_id), 30_000, `${type} attempt 2`);
        assert.ok(second.at - first.at <= 30_000, `${type} resent after ${second.at - first.at} ms`);
        assert.equal(second.headers['webhook-id'], first.headers['webhook-id']);
        assert.equal(second.headers['x-webhook-correlation-id'], first.json.event_id);
        assert.equal(second.json.event_time, first.json.event_time);
        assert.notEqual(second.json.sent_at, first.json.sent_at);
        assert.equal(second.json.attempt, 2);
        for (const r of [first, second]) {
          assertSigned(r, created.secret);
          assert.equal(r.headers['x-app-uid'], app.uid);
          assert.equal(r.headers['content-type'], 'application/json');
          assert.equal(r.json.app_uid, app.uid);
        }
      }
      const minted = rx.requests.find(isEvent('asset.minted', 2))!;
      assert.equal(minted.json.data.asset.uid, asset);
      assert.equal(minted.json.data.asset.mint_status ?? 'minted', 'minted');
      const wallet = rx.requests.find(isEvent('user.wallet_created', 2))!;
      assert.equal(wallet.json.data.user.uid, user);

      // The management API shows the state and the attempt log.
      const eventId = minted.json.event_id;
      const state = await waitFor('delivered state', async () => {
        const r = await admin.get(`/apps/${app.uid}/webhook/events?status=delivered`);
        return r.body.data.length === 2 ? r.body.data : null;
      });
      assert.deepEqual(state.map((d: any) => d.event).sort(), ['asset.minted', 'user.wallet_created']);
      const log = await admin.get(`/apps/${app.uid}/webhook/events/${eventId}/attempts`);
      assert.equal(log.status, 200);
      assert.deepEqual(
        log.body.data.map((a: any) => [a.attempt, a.status_code, a.url]),
        [
          [2, 200, rx.url],
          [1, 500, rx.url],
        ],
      );
      assert.equal(log.body.data[1].error, 'HTTP 500');
      assert.equal(log.body.data[1].response, 'answer 500');
      assert.ok(log.body.data.every((a: any) => typeof a.latency_ms === 'number' && /Z$/.test(a.time)));

      // A redelivery through the management API: attempt 3, same id.
      const again = await admin.post(`/apps/${app.uid}/webhook/events/${eventId}/redeliver`);
      assert.equal(again.status, 200, again.raw);
      const third = await rx.next(isEvent('asset.minted', 3, eventId), 10_000, 'redelivery');
      assertSigned(third, created.secret);
    });

    it('item.minted, item.transferred (a relayed transfer and a deposit from outside) and item.burned: signed, each retried with its own stable id', async () => {
      const app = await t.newApp();
      const c = await admin.post(`/apps/${app.uid}/collections`, { name: 'Potions', symbol: 'POT', standard: 'ERC1155' });
      assert.equal(c.status, 201, c.raw);
      const collection = c.body.data.uid as string;
      const deployed = await waitFor('items collection deployed', async () => {
        const r = await app.api.get(`/collection/${collection}`);
        return r.body.data.status === 'deployed' ? r.body.data : null;
      });
      const rx = await receiver();
      const failedOnce = new Set<string>();
      rx.decide = (r) => (failedOnce.has(r.json.event_id) ? 200 : (failedOnce.add(r.json.event_id), 500));
      const hook = await setWebhook(app.uid, { url: rx.url, events: ['item.minted', 'item.transferred', 'item.burned'] });

      const user = (await app.api.post('/user', {})).body.data.uid as string;
      const item = (
        await app.api.post('/item', {
          collection_uid: collection,
          item_external_id: 'potion',
          data: { name: 'Potion', image_url: 'https://example.com/p.png', store_image_on_ipfs: false },
        })
      ).body.data.uid as string;
      const tokenId = BigInt((await app.api.get(`/item/${item}`)).body.data.token_id);
      const done = (kind: string, uid: string) =>
        waitFor(`item ${kind} done`, async () => (await app.api.get(`/item/${kind}/${uid}`)).body.data.status === 'done', 60_000);
      const mint = (await app.api.post('/item/mint', { item_uid: item, to_user_uid: user, amount: 5, nonce: 1 })).body.data.uid as string;
      await done('mint', mint);
      const outsider = privateKeyToAccount(generatePrivateKey());
      const transfer = (await app.api.post('/item/transfer', { item_uid: item, from_user_uid: user, to_address: outsider.address, amount: 2 })).body.data
        .uid as string;
      await done('transfer', transfer);
      const burn = (await app.api.post('/item/burn', { item_uid: item, from_user_uid: user, amount: 1 })).body.data.uid as string;
      await done('burn', burn);
      // The outsider sends one back: a deposit, announced as item.transferred too.
      await embeddedChain.fund(t, outsider.address, parseEther('1'));
      const wallet = createWalletClient({ account: outsider, chain: foundry, transport: viemHttp(t.svc.chain!.rpcUrl) });
      const userWallet = t.svc.ctx.keys.user(user).address;
      const hash = await wallet.writeContract({
        address: deployed.contract_address as Address,
        abi: parseAbi(['function safeTransferFrom(address, address, uint256, uint256, bytes)']),
        functionName: 'safeTransferFrom',
        args: [outsider.address, userWallet, tokenId, 1n, '0x'],
      });

      const delivered = async (what: string, pred: (r: Received) => boolean) => {
        const first = await rx.next((r) => r.headers['x-webhook-attempt'] === '1' && pred(r), 60_000, `${what} attempt 1`);
        const second = await rx.next(isEvent(first.json.event, 2, first.json.event_id), 30_000, `${what} attempt 2`);
        assert.equal(second.headers['webhook-id'], first.headers['webhook-id'], `${what}: the same id on the retry`);
        assert.equal(
          second.body.replace(/"sent_at":"[^"]*"/, '').replace(/"attempt":\d+/, ''),
          first.body.replace(/"sent_at":"[^"]*"/, '').replace(/"attempt":\d+/, ''),
        );
        for (const r of [first, second]) {
          assertSigned(r, hook.secret);
          assert.equal(r.json.app_uid, app.uid);
          assert.equal(r.json.data.item.uid, item);
        }
        return first;
      };
      const minted = await delivered('item.minted', (r) => r.json.event === 'item.minted');
      assert.equal(minted.json.data.mint.uid, mint);
      assert.equal(minted.json.data.mint.amount, 5);
      const relayed = await delivered('item.transferred (relayed)', (r) => r.json.event === 'item.transferred' && r.json.data.transfer?.uid === transfer);
      assert.equal(relayed.json.data.transfer.amount, 2);
      const burned = await delivered('item.burned', (r) => r.json.event === 'item.burned');
      assert.equal(burned.json.data.burn.uid, burn);
      const deposit = await delivered('item.transferred (deposit)', (r) => r.json.event === 'item.transferred' && r.json.data.deposit?.tx_hash === hash);
      assert.equal(deposit.json.data.deposit.user_uid, user);
      assert.equal(deposit.json.data.deposit.amount, 1);
      const ids = [minted, relayed, burned, deposit].map((r) => r.json.event_id);
      assert.equal(new Set(ids).size, 4, 'each event its own id');
    });

    it("a hanging endpoint with 20 queued events does not hold up another App's asset.minted", async () => {
      const slowApp = await t.newApp();
      const fastApp = await t.newApp();
      const collection = await t.newCollection(fastApp.uid, false);
      const slow = await receiver();
      slow.decide = () => 'hang';
      const fast = await receiver();
      await setWebhook(slowApp.uid, { url: slow.url });
      const fastHook = await setWebhook(fastApp.uid, { url: fast.url, events: ['asset.minted'] });
      for (let i = 0; i < 20; i++) await emitEvent(t.svc.ctx.db, slowApp.uid, 'asset.minted', { asset: { uid: String(100000000000 + i) } });
      await waitFor('the slow endpoint holding its requests', async () => slow.hanging >= 4, 10_000, 20);

      const { asset } = await mint(fastApp, collection);
      const got = await fast.next((r) => r.json.event === 'asset.minted' && r.json.data.asset.uid === asset, 60_000, 'asset.minted of the other App');
      const lag = got.at - Date.parse(got.json.event_time);
      // A dispatcher the hanging endpoint held up would wait out its requests' 15 s timeout first (a
      // quiet machine delivers in well under a second; a busy one was seen at 11 s).
      assert.ok(lag < 15_000, `asset.minted arrived ${lag} ms after the mint`);
      assertSigned(got, fastHook.secret);
      assert.ok(slow.hanging >= 1, 'the slow endpoint was still hanging');
      assert.ok(slow.maxHanging <= 4, `at most 4 requests at once to one endpoint (saw ${slow.maxHanging})`);
      await setWebhook(slowApp.uid, { enabled: false });
    });

    it('an endpoint that is down, reconfigured while its event waits, gets the next resend at the new URL with the new secret', async () => {
      const app = await t.newApp();
      const deadUrl = `http://127.0.0.1:${await freePort()}/hook`; // nothing listens there
      const old = await setWebhook(app.uid, { url: deadUrl });
      const eventId = await emitEvent(t.svc.ctx.db, app.uid, 'asset.minted', { asset: { uid: '123456789012' } });
      const failed = await waitFor(
        'a failed attempt at the dead URL',
        async () => {
          const r = await admin.get(`/apps/${app.uid}/webhook/events/${eventId}/attempts`);
          return r.body.data?.length ? r.body.data : null;
        },
        15_000,
        50,
      );
      assert.equal(failed[0].url, deadUrl);
      assert.match(failed[0].error, /ECONNREFUSED/);

      const rx = await receiver();
      const changed = await setWebhook(app.uid, { url: rx.url, rotate_secret: true });
      assert.match(changed.secret, /^whsec_/);
      assert.notEqual(changed.secret, old.secret);
      const got = await rx.next(isEvent('asset.minted', undefined, eventId), 30_000, 'the resend at the new URL');
      assert.ok(Number(got.headers['x-webhook-attempt']) >= 2);
      assert.equal(got.headers['webhook-id'], eventId);
      assertSigned(got, changed.secret);
      const state = await waitFor('delivered', async () =>
        (await admin.get(`/apps/${app.uid}/webhook/events?status=delivered`)).body.data.find((d: any) => d.event_id === eventId),
      );
      assert.equal(state.status, 'delivered');
    });

    it('410 disables the endpoint visibly; setting it again re-enables it and sends what was held', async () => {
      const app = await t.newApp();
      const rx = await receiver();
      rx.decide = () => 410;
      await setWebhook(app.uid, { url: rx.url });
      const first = await emitEvent(t.svc.ctx.db, app.uid, 'asset.burned', { asset: { uid: '1' } });
      await rx.next(isEvent('asset.burned', 1, first), 10_000, 'the 410 attempt');
      const disabled = await waitFor('disabled', async () => {
        const r = await admin.get(`/apps/${app.uid}/webhook`);
        return r.body.data.enabled === false ? r.body.data : null;
      });
      assert.match(disabled.disabled_reason, /410 Gone/);
      const held = await emitEvent(t.svc.ctx.db, app.uid, 'asset.burned', { asset: { uid: '2' } });
      const list = await admin.get(`/apps/${app.uid}/webhook/events?status=disabled`);
      assert.deepEqual(list.body.data.map((d: any) => d.event_id).sort(), [first, held].sort());
      const refused = await admin.post(`/apps/${app.uid}/webhook/events/${held}/redeliver`);
      assert.equal(refused.status, 409);

      rx.decide = () => 200;
      const again = await setWebhook(app.uid, { url: rx.url });
      assert.equal(again.enabled, true);
      assert.equal(again.secret, undefined, 'the secret is only shown when new');
      await rx.next(isEvent('asset.burned', undefined, held), 10_000, 'the held event');
      await rx.next(isEvent('asset.burned', 2, first), 10_000, 'the 410ed event, again');
    });

    it('the management API needs the operator token and validates input', async () => {
      const app = await t.newApp();
      const anon = new ApiClient(`${t.svc.url}/admin/v1`);
      assert.equal((await anon.call('PUT', `/apps/${app.uid}/webhook`, { url: 'http://127.0.0.1:9/x' })).status, 401);
      assert.equal((await admin.get(`/apps/${app.uid}/webhook`)).status, 404);
      assert.equal((await admin.call('PUT', `/apps/${app.uid}/webhook`, {})).status, 400); // url required at creation
      assert.equal((await admin.call('PUT', `/apps/${app.uid}/webhook`, { url: 'ftp://example.com/' })).status, 400);
      assert.equal((await admin.call('PUT', `/apps/${app.uid}/webhook`, { url: 'http://127.0.0.1:9/x', events: ['nope.event'] })).status, 400);
      assert.equal((await admin.call('PUT', `/apps/999999999999/webhook`, { url: 'http://127.0.0.1:9/x' })).status, 404);
      assert.equal((await admin.get(`/apps/${app.uid}/webhook/events?status=weird`)).status, 400);
      const created = await admin.call('PUT', `/apps/${app.uid}/webhook`, { url: 'http://127.0.0.1:9/x', events: ['asset.minted', 'asset.burned'] });
      assert.equal(created.status, 201);
      assert.deepEqual(created.body.data.events, ['asset.burned', 'asset.minted']);
      assert.equal((await admin.get(`/apps/${app.uid}/webhook/events/00000000-0000-0000-0000-000000000000/attempts`)).status, 404);
      await setWebhook(app.uid, { enabled: false });
    });

    it('the CLI sets (keeping the secret unless rotated), logs and redelivers', async () => {
      const app = await t.newApp();
      const rx = await receiver();
      // The service's store and keys (the master key it generated into DATA_DIR); empty = unset.
      const env = {
        ...process.env,
        DATA_DIR: t.dataDir,
        DATABASE_URL: t.svc.ctx.config.databaseUrl ?? '',
        MASTER_KEY: '',
        LOG_LEVEL: 'silent',
        OUTBOUND_ALLOW_PRIVATE: 'true',
      };
      const cli = async (...args: string[]) => {
        const out = await promisify(execFile)(process.execPath, [path.join(root, 'bin/mintworks.js'), ...args, '--json'], {
          env,
          cwd: root,
        }).catch((err) => {
          throw new Error(`mintworks ${args.join(' ')}: ${err.stdout}${err.stderr}`);
        });
        return JSON.parse(out.stdout);
      };
      const set1 = await cli('webhook', 'set', '--app', app.uid, '--url', rx.url);
      assert.match(set1.secret, /^whsec_/);
      const set2 = await cli('webhook', 'set', '--app', app.uid, '--url', rx.url, '--events', 'asset.minted,asset.transferred');
      assert.equal(set2.secret, set1.secret, 'kept without --rotate-secret');
      assert.deepEqual(set2.events, ['asset.minted', 'asset.transferred']);
      const set3 = await cli('webhook', 'set', '--app', app.uid, '--rotate-secret');
      assert.notEqual(set3.secret, set1.secret);

      const eventId = await emitEvent(t.svc.ctx.db, app.uid, 'asset.transferred', { transfer: { uid: '5' } });
      const got = await rx.next(isEvent('asset.transferred', 1, eventId), 10_000, 'the event');
      assertSigned(got, set3.secret);
      assertSigned(got, set1.secret); // the rotated-out secret still signs during its grace period
      await waitFor('delivered', async () => (await admin.get(`/apps/${app.uid}/webhook/events?status=delivered`)).body.data.length === 1, 10_000, 50);
      const log = await cli('webhook', 'log', '--app', app.uid, '--event', eventId);
      assert.equal(log.delivery.status, 'delivered');
      assert.equal(log.attempts.length, 1);
      assert.equal(log.attempts[0].status_code, 200);
      const re = await cli('webhook', 'redeliver', '--app', app.uid, '--event', eventId);
      assert.equal(re.status, 'pending');
      await rx.next(isEvent('asset.transferred', 2, eventId), 10_000, 'the redelivery');
      const disabled = await cli('webhook', 'set', '--app', app.uid, '--disable');
      assert.equal(disabled.enabled, false);
    });
  });
}
