// The webhook dispatcher against a real database (SQLite here; PostgreSQL from
// test/integration/webhooks-dispatcher.postgres.test.ts), with an injected clock and an injected HTTP
// sender, so 73 hours of retries run in a moment and every request can be inspected.
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { installationOf, loadConfig } from '../../src/config/config.js';
import type { Store } from '../../src/store/db.js';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { JobQueue } from '../../src/jobs/queue.js';
import { SecretBox } from '../../src/util/secretbox.js';
import type { KeyRing } from '../../src/chain/keys.js';
import type { Ctx } from '../../src/services/context.js';
import { createApp } from '../../src/services/apps/registry.js';
import { emitEvent } from '../../src/services/events.js';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js';
import type { WebhookSendRequest, WebhookSendResult } from '../../src/webhooks/sender.js';
import { setWebhook, getWebhook } from '../../src/webhooks/endpoints.js';
import { listAttempts, listDeliveries, redeliver } from '../../src/webhooks/deliveries.js';
import { verifyOurSignature } from '../../src/util/webhook-signing.js';
import { CAP_WINDOW_MS, HOUR, MINUTE, SECOND } from '../../src/webhooks/schedule.js';
import { tempDir } from '../helpers/env.js';
import { migratedPostgres, migratedSqliteDir } from '../helpers/schema-copies.js';

interface Sent extends WebhookSendRequest {
  at: number;
}

type Responder = (req: WebhookSendRequest) => Promise<WebhookSendResult>;
const reply = (status: number, headers: Record<string, string> = {}, body = ''): Promise<WebhookSendResult> => Promise.resolve({ status, headers, body });

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** The promise's value, or a failure when it takes longer than `ms` (an event to wait for, bounded). */
async function within<T>(ms: number, p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Largest number of attempt times within any closed CAP_WINDOW_MS window (exhaustive). */
function maxPerWindow(times: number[]): number {
  const t = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < t.length; i++) {
    while (j < t.length && t[j] <= t[i] + CAP_WINDOW_MS) j++;
    best = Math.max(best, j - i);
  }
  return best;
}

export function dispatcherSuite(dbKind: 'sqlite' | 'postgres'): void {
  describe(`webhook dispatcher (${dbKind})`, () => {
    let ctx: Ctx;
    let store: Store;
    let dropDb: (() => Promise<void>) | null = null;
    let clock = 0;
    let sent: Sent[] = [];
    let respond: Responder = () => reply(200);
    /** Simulated time each request takes. */
    let requestMs = 0;

    const sender = async (req: WebhookSendRequest): Promise<WebhookSendResult> => {
      sent.push({ ...req, at: clock });
      const r = await respond(req);
      clock += requestMs;
      return r;
    };
    const dispatcher = (opts: ConstructorParameters<typeof WebhookDispatcher>[1] = {}) =>
      new WebhookDispatcher(ctx, { now: () => clock, sender, random: () => 0.5, ...opts });

    const delivery = (id: string) => ctx.db.selectFrom('webhook_deliveries').selectAll().where('event_id', '=', id).executeTakeFirstOrThrow();
    const newApp = async () => (await createApp(ctx, `app ${Math.random()}`, 'development')).uid;
    const emit = (
      appUid: string,
      type: Parameters<typeof emitEvent>[2] = 'asset.minted',
      data: Record<string, unknown> = { asset: { uid: '123456789012', name: 'Sword' } },
    ) => emitEvent(ctx.db, appUid, type, data);

    before(async () => {
      const pgdb = dbKind === 'postgres' ? await migratedPostgres() : null;
      const dataDir = pgdb ? tempDir() : await migratedSqliteDir();
      dropDb = pgdb?.drop ?? null;
      const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', OUTBOUND_ALLOW_PRIVATE: 'true', ...(pgdb ? { DATABASE_URL: pgdb.url } : {}) });
      store = openStore({ databaseUrl: config.databaseUrl, dataDir });
      assert.equal(store.dialect, dbKind);
      await migrateToLatest(store);
      ctx = {
        config,
        installation: installationOf(config),
        db: store.db,
        dialect: store.dialect,
        queue: new JobQueue(store.db, store.dialect),
        box: new SecretBox(randomBytes(32).toString('hex')),
        log: pino({ level: 'silent' }),
        keys: null as unknown as KeyRing,
      };
    });
    after(async () => {
      await store?.close();
      await dropDb?.();
    });
    beforeEach(async () => {
      // Each test starts with nothing due from the previous ones (they share the database).
      await ctx.db.updateTable('webhook_deliveries').set({ status: 'expired', next_attempt_at: null }).where('status', 'in', ['pending', 'disabled']).execute();
      sent = [];
      respond = () => reply(200);
      requestMs = 0;
    });

    it('retries for 72 simulated hours at most 10 times an hour, then expires and never sends again', async () => {
      const app = await newApp();
      const { secret } = await setWebhook(ctx, app, { url: 'http://receiver.test/hook' });
      const id = await emit(app);
      const t0 = (await delivery(id)).event_time_ms;
      clock = t0;
      requestMs = 2 * SECOND;
      respond = () => reply(500, {}, 'boom');
      const d = dispatcher();
      for (;;) {
        const row = await delivery(id);
        if (row.status !== 'pending') break;
        clock = Math.max(clock, row.next_attempt_at!);
        if (clock > t0 + 73 * HOUR) break;
        await d.runOnce();
      }
      const row = await delivery(id);
      assert.equal(row.status, 'expired');
      const times = sent.map((s) => s.at);
      assert.ok(sent.length >= 70, `only ${sent.length} attempts`);
      assert.equal(row.attempts, sent.length);
      assert.ok(times[1] - (times[0] + requestMs) <= 30 * SECOND, 'first resend within 30 s of the failure');
      assert.ok(maxPerWindow(times) <= 10, `max ${maxPerWindow(times)} attempts in an hour`);
      assert.ok(times.at(-1)! < t0 + 72 * HOUR, 'last attempt before 72 h');
      assert.ok(times.at(-1)! > t0 + 70 * HOUR, 'kept trying until the last hours');

      // Every attempt: same id, counted attempts, a valid signature for its own timestamp.
      sent.forEach((s, i) => {
        assert.equal(s.headers['webhook-id'], id);
        assert.equal(s.headers['x-webhook-correlation-id'], id);
        assert.equal(s.headers['x-webhook-attempt'], String(i + 1));
        assert.equal(JSON.parse(s.body).attempt, i + 1);
        assert.equal(s.headers['webhook-timestamp'], String(Math.floor(s.at / 1000)));
        assert.ok(verifyOurSignature(s.headers['x-webook-signature'], secret, id, Number(s.headers['webhook-timestamp']), s.body, { nowSeconds: s.at / 1000 }));
      });
      // The first attempt is at (about) real time, so the library's 5-minute tolerance accepts it.
      new Webhook(secret).verify(sent[0].body, sent[0].headers);

      // 73 h: nothing more.
      clock = t0 + 73 * HOUR;
      assert.equal(await d.runOnce(), 0);
      assert.equal(sent.length, row.attempts);
      const log = await listAttempts(ctx, app, { eventId: id, limit: 1000 });
      assert.equal(log.length, sent.length);
      assert.deepEqual(
        log.map((a) => a.attempt),
        sent.map((_, i) => sent.length - i),
      ); // newest first
      assert.ok(log.every((a) => a.status_code === 500 && a.error === 'HTTP 500' && a.response === 'boom' && a.url === 'http://receiver.test/hook'));
      const [view] = await listDeliveries(ctx, app, { status: 'expired' });
      assert.equal(view.event_id, id);
      assert.equal(view.next_attempt_at, null);
    });

    it('delivers on 2xx and stops', async () => {
      const app = await newApp();
      await setWebhook(ctx, app, { url: 'http://receiver.test/ok' });
      const id = await emit(app, 'user.wallet_created', { user: { uid: '111111111111' } });
      clock = (await delivery(id)).event_time_ms;
      respond = () => reply(204);
      const d = dispatcher();
      assert.equal(await d.runOnce(), 1);
      const row = await delivery(id);
      assert.equal(row.status, 'delivered');
      assert.equal(row.delivered_at, clock);
      clock += 10 * HOUR;
      assert.equal(await d.runOnce(), 0);
      assert.equal(sent.length, 1);
      assert.deepEqual(JSON.parse(sent[0].body).data, { user: { uid: '111111111111' } });
      assert.equal(JSON.parse(sent[0].body).event, 'user.wallet_created');
    });

    it('honours Retry-After', async () => {
      const app = await newApp();
      await setWebhook(ctx, app, { url: 'http://receiver.test/busy' });
      const id = await emit(app);
      clock = (await delivery(id)).event_time_ms;
      let n = 0;
      respond = () => (n++ === 0 ? reply(429, { 'retry-after': '600' }) : reply(200));
      const d = dispatcher();
      await d.runOnce();
      const waiting = await delivery(id);
      assert.equal(waiting.next_attempt_at, clock + 600 * SECOND);
      clock += 599 * SECOND;
      assert.equal(await d.runOnce(), 0, 'not before Retry-After');
      clock += SECOND;
      assert.equal(await d.runOnce(), 1);
      assert.equal((await delivery(id)).status, 'delivered');
      assert.equal(sent[1].at - sent[0].at, 600 * SECOND);
    });

    it('counts 3xx, errors and timeouts as failures and logs the first 1 KiB of the response', async () => {
      const app = await newApp();
      await setWebhook(ctx, app, { url: 'http://receiver.test/moved' });
      const id = await emit(app);
      clock = (await delivery(id)).event_time_ms;
      const d = dispatcher();
      respond = () => reply(301, { location: 'http://elsewhere.test/' }, 'x'.repeat(5000));
      await d.runOnce();
      let row = await delivery(id);
      assert.equal(row.status, 'pending');
      assert.equal(row.last_status_code, 301);
      assert.match(row.last_error!, /redirects are not followed/);
      clock = row.next_attempt_at!;
      respond = () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 10.9.9.9:80'), { code: 'ECONNREFUSED' }));
      await d.runOnce();
      row = await delivery(id);
      assert.equal(row.last_status_code, null);
      assert.match(row.last_error!, /ECONNREFUSED/);
      const [second, first] = await listAttempts(ctx, app, { eventId: id });
      assert.equal(first.response!.length, 1024);
      assert.equal(first.status_code, 301);
      assert.equal(second.status_code, null);
      assert.equal(second.response, null);
      assert.equal(row.attempts, 2);
    });

    it('disables the endpoint on 410, holds its events, and delivers them when it is set again', async () => {
      const app = await newApp();
      await setWebhook(ctx, app, { url: 'http://receiver.test/gone' });
      const first = await emit(app);
      const second = await emit(app);
      clock = (await delivery(second)).event_time_ms;
      respond = () => reply(410);
      const d = dispatcher({ perEndpoint: 1 });
      await d.runOnce(); // one of the two, per the per-endpoint cap
      const wh = (await getWebhook(ctx, app))!;
      assert.equal(wh.enabled, false);
      assert.match(wh.disabled_reason!, /410 Gone/);
      assert.deepEqual([(await delivery(first)).status, (await delivery(second)).status], ['disabled', 'disabled']);
      const third = await emit(app);
      assert.equal((await delivery(third)).status, 'disabled', 'events of a disabled webhook are held');
      clock += HOUR;
      assert.equal(await d.runOnce(), 0);
      assert.equal(sent.length, 1);
      await assert.rejects(redeliver(ctx, app, first, clock), /disabled/);

      // Setting it again re-enables it; the held events (within 72 h) are sent.
      respond = () => reply(200);
      await setWebhook(ctx, app, { url: 'http://receiver.test/back' });
      assert.equal((await getWebhook(ctx, app))!.enabled, true);
      clock = Math.max(clock, Date.now());
      const d2 = dispatcher();
      while ((await d2.runOnce()) > 0);
      assert.deepEqual(await Promise.all([first, second, third].map(async (e) => (await delivery(e)).status)), ['delivered', 'delivered', 'delivered']);
      assert.deepEqual(
        sent.slice(1).map((s) => s.url),
        ['http://receiver.test/back', 'http://receiver.test/back', 'http://receiver.test/back'],
      );
    });

    it('sends resends with the configuration current at each attempt (URL, rotated secret)', async () => {
      const app = await newApp();
      const { secret: oldSecret } = await setWebhook(ctx, app, { url: 'http://old.test/hook' });
      const id = await emit(app);
      clock = (await delivery(id)).event_time_ms;
      respond = () => reply(503);
      const d = dispatcher();
      await d.runOnce();
      const { secret: newSecret, rotated } = await setWebhook(ctx, app, { url: 'http://new.test/hook', rotateSecret: true });
      assert.ok(rotated);
      assert.notEqual(newSecret, oldSecret);
      respond = () => reply(200);
      clock = Math.max(clock, (await delivery(id)).next_attempt_at!);
      await d.runOnce();
      assert.deepEqual(
        sent.map((s) => s.url),
        ['http://old.test/hook', 'http://new.test/hook'],
      );
      const resend = sent[1];
      assert.equal(resend.headers['x-webhook-attempt'], '2');
      assert.equal(resend.headers['webhook-id'], id);
      const ts = Number(resend.headers['webhook-timestamp']);
      assert.ok(verifyOurSignature(resend.headers['x-webook-signature'], newSecret, id, ts, resend.body, { nowSeconds: resend.at / 1000 }));
      assert.ok(
        verifyOurSignature(resend.headers['x-webook-signature'], oldSecret, id, ts, resend.body, { nowSeconds: resend.at / 1000 }),
        'the old secret still signs during the rotation',
      );
      assert.equal(resend.headers['webhook-signature'].split(' ').length, 2);
      assert.equal(
        verifyOurSignature(sent[0].headers['x-webook-signature'], newSecret, id, Number(sent[0].headers['webhook-timestamp']), sent[0].body, {
          nowSeconds: sent[0].at / 1000,
        }),
        false,
      );
      // Once the grace period is over, only the new secret signs.
      const later = (await ctx.db.selectFrom('webhook_endpoints').select('previous_valid_until').where('app_uid', '=', app).executeTakeFirstOrThrow())
        .previous_valid_until!;
      const again = await emit(app);
      clock = Math.max(later, (await delivery(again)).next_attempt_at!);
      await d.runOnce();
      assert.equal(sent[2].headers['webhook-signature'].split(' ').length, 1);
      assert.ok(
        verifyOurSignature(sent[2].headers['x-webook-signature'], newSecret, again, Number(sent[2].headers['webhook-timestamp']), sent[2].body, {
          nowSeconds: sent[2].at / 1000,
        }),
      );
    });

    it('delivers events emitted after the webhook is set, filtered by type; redelivery can send older ones', async () => {
      const app = await newApp();
      const before = await emit(app);
      await setWebhook(ctx, app, { url: 'http://receiver.test/f', events: ['asset.minted'] });
      const filtered = await emit(app, 'user.wallet_created', { user: {} });
      const wanted = await emit(app, 'asset.minted');
      const rows = await ctx.db.selectFrom('webhook_deliveries').select('event_id').where('app_uid', '=', app).execute();
      assert.deepEqual(
        rows.map((r) => r.event_id),
        [wanted],
      );
      void filtered;
      clock = Date.now();
      const d = dispatcher();
      await d.runOnce();
      assert.equal(sent.length, 1);
      const view = await redeliver(ctx, app, before, clock);
      assert.equal(view.status, 'pending');
      await d.runOnce();
      assert.equal((await delivery(before)).status, 'delivered');
      assert.equal(sent.length, 2);
      assert.equal(sent[1].headers['webhook-id'], before);
      await assert.rejects(redeliver(ctx, app, '00000000-0000-0000-0000-000000000000', clock), /Event not found/);
      await assert.rejects(setWebhook(ctx, app, { events: ['asset.nope'] }), /Unknown event type/);
    });

    it('redelivers a delivered event with the next attempt number, never more than 10 times an hour', async () => {
      const app = await newApp();
      await setWebhook(ctx, app, { url: 'http://receiver.test/r' });
      const id = await emit(app);
      clock = (await delivery(id)).event_time_ms;
      const d = dispatcher();
      await d.runOnce();
      for (let i = 0; i < 15; i++) {
        clock += SECOND;
        await redeliver(ctx, app, id, clock);
        await d.runOnce();
      }
      assert.equal(sent.length, 10, 'the 11th attempt waits for the hour to pass');
      assert.deepEqual(
        sent.map((s) => s.headers['x-webhook-attempt']),
        ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10'],
      );
      const row = await delivery(id);
      assert.equal(row.status, 'pending');
      assert.equal(row.next_attempt_at, sent[0].at + CAP_WINDOW_MS + 1);
      clock = row.next_attempt_at!;
      await d.runOnce();
      assert.equal(sent.length, 11);
      assert.ok(maxPerWindow(sent.map((s) => s.at)) <= 10);
    });

    it('a lease keeps a delivery with one worker; another takes it over when the lease runs out', async () => {
      const app = await newApp();
      await setWebhook(ctx, app, { url: 'http://receiver.test/lease' });
      const id = await emit(app);
      clock = (await delivery(id)).event_time_ms;
      const called = deferred();
      const release = deferred<WebhookSendResult>();
      respond = () => {
        called.resolve();
        return release.promise;
      };
      const d1 = dispatcher({ leaseMs: MINUTE });
      const first = d1.runOnce();
      await called.promise; // d1 is sending (as good as a crashed worker)
      respond = () => reply(200);
      const d2 = dispatcher({ leaseMs: MINUTE });
      assert.equal(await d2.runOnce(), 0, 'leased by the first worker');
      clock += MINUTE + 1;
      assert.equal(await d2.runOnce(), 1);
      assert.equal((await delivery(id)).status, 'delivered');
      release.resolve({ status: 500, headers: {}, body: '' });
      await first;
      const row = await delivery(id);
      assert.equal(row.status, 'delivered', 'the late answer of the first worker does not overwrite the state');
      assert.equal((await listAttempts(ctx, app, { eventId: id })).length, 2, 'but its attempt is logged');
    });

    it('isolates Apps: a hanging endpoint holds at most its per-endpoint slots; stop releases its events', async () => {
      const slow = await newApp();
      const fast = await newApp();
      await setWebhook(ctx, slow, { url: 'http://hanging.test/' });
      await setWebhook(ctx, fast, { url: 'http://fast.test/' });
      // More than one claim query's candidates (64): the slow App's backlog must not hide the fast App's event.
      for (let i = 0; i < 100; i++) await emit(slow);
      let inFlightSlow = 0;
      let maxInFlightSlow = 0;
      const fastDelivered = deferred<number>();
      respond = (req) => {
        if (req.url.startsWith('http://fast.test/')) {
          fastDelivered.resolve(inFlightSlow);
          return reply(200);
        }
        inFlightSlow++;
        maxInFlightSlow = Math.max(maxInFlightSlow, inFlightSlow);
        return new Promise((_, reject) => req.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
      };
      clock = Date.now() + SECOND;
      const d = dispatcher({ perEndpoint: 4, concurrency: 8, pollMs: 20 });
      d.start();
      const fastId = await emit(fast);
      clock = Date.now() + SECOND;
      const slowBusy = await within(5000, fastDelivered.promise, "the fast App's event sent while the slow endpoint hangs").catch(async (err) => {
        await d.stop();
        throw err;
      });
      assert.equal(slowBusy, 4, 'the slow endpoint was holding its 4 slots');
      await (async () => {
        for (let i = 0; i < 200 && (await delivery(fastId)).status !== 'delivered'; i++) await new Promise((r) => setImmediate(r));
      })();
      assert.equal((await delivery(fastId)).status, 'delivered');
      await d.stop();
      assert.equal(maxInFlightSlow, 4);
      const slowRows = await ctx.db.selectFrom('webhook_deliveries').selectAll().where('app_uid', '=', slow).execute();
      assert.equal(slowRows.length, 100);
      assert.ok(
        slowRows.every((r) => r.status === 'pending' && r.attempts === 0 && r.lease_until === null),
        'aborted sends are not attempts and are released',
      );
      assert.equal((await listAttempts(ctx, slow)).length, 0);
    });
  });
}
