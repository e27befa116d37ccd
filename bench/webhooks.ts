// Webhook delivery throughput against a local receiver, next to a baseline of raw HTTP POSTs to the same
// receiver in the same run. Prints ONE JSON line.
//
//   node --import tsx bench/webhooks.ts                        # SQLite in a temp dir, 2000 events
//   BENCH_EVENTS=5000 BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench node --import tsx bench/webhooks.ts
//
// What is measured: events queued (in the database, as emitEvent writes them) -> signed, POSTed, 2xx
// received and the delivery recorded (attempt log + state) by the real dispatcher with the real
// SSRF-guarded sender (OUTBOUND_ALLOW_PRIVATE=true so 127.0.0.1 is allowed). Two shapes: the events
// of one App (bounded by the per-endpoint cap, 4 in flight) and of 8 Apps (the global pool, 32).
// The baseline is the same number of POSTs of a similar body, 32 at a time, a new connection each
// (as the dispatcher does), with nothing else: the ceiling the receiver and the HTTP stack allow.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { openStore } from '../src/store/db.js';
import { migrateToLatest } from '../src/store/migrate.js';
import { JobQueue } from '../src/jobs/queue.js';
import { SecretBox } from '../src/util/secretbox.js';
import type { KeyRing } from '../src/chain/keys.js';
import type { Ctx } from '../src/services/context.js';
import { createApp } from '../src/services/apps.js';
import { emitEvent } from '../src/services/events.js';
import { setWebhook, webhookDispatcher } from '../src/webhooks/index.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000);
const CONCURRENCY = 32;
const PER_ENDPOINT = 4;

// ------------------------------------------------------------------------------------------ receiver
let received = 0;
let target = Infinity;
let reached: (() => void) | null = null;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    if (++received >= target && reached) {
      reached();
      reached = null;
    }
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
const expect = (n: number) => {
  received = 0;
  target = n;
  return new Promise<void>((r) => (reached = r));
};

// ------------------------------------------------------------------------------------------ baseline
const sampleBody = JSON.stringify({ event: 'asset.minted', event_id: '00000000-0000-0000-0000-000000000000', app_uid: '123456789012', event_time: new Date().toISOString(), sent_at: new Date().toISOString(), attempt: 1, data: { asset: { uid: '123456789012', name: 'Sword', metadata: { description: 'x'.repeat(300) } } } });

function post(): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve());
    });
    req.on('error', reject);
    req.end(sampleBody);
  });
}

async function baseline(n: number): Promise<number> {
  const t = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        next++;
        await post();
      }
    }),
  );
  return n / ((performance.now() - t) / 1000);
}

// ---------------------------------------------------------------------------------------- dispatcher
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mintworks-bench-'));
const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', OUTBOUND_ALLOW_PRIVATE: 'true', ...(process.env.BENCH_DATABASE_URL ? { DATABASE_URL: process.env.BENCH_DATABASE_URL } : {}) });
const store = openStore({ databaseUrl: config.databaseUrl, dataDir });
await migrateToLatest(store);
const ctx: Ctx = { config, db: store.db, dialect: store.dialect, queue: new JobQueue(store.db, store.dialect), box: new SecretBox(randomBytes(32).toString('hex')), log: pino({ level: 'silent' }), keys: null as unknown as KeyRing };

async function queueEvents(apps: string[], n: number): Promise<void> {
  const data = JSON.parse(sampleBody).data as Record<string, unknown>;
  for (let i = 0; i < n; i += 500) {
    await ctx.db.transaction().execute(async (tx) => {
      for (let j = i; j < Math.min(n, i + 500); j++) await emitEvent(tx, apps[j % apps.length], 'asset.minted', data);
    });
  }
}

async function throughput(appCount: number, n: number): Promise<number> {
  const apps: string[] = [];
  for (let i = 0; i < appCount; i++) {
    const a = await createApp(ctx, `bench ${i}`, 'development');
    await setWebhook(ctx, a.uid, { url });
    apps.push(a.uid);
  }
  await queueEvents(apps, n);
  const done = expect(n);
  const dispatcher = webhookDispatcher(ctx, { concurrency: CONCURRENCY, perEndpoint: PER_ENDPOINT });
  const t = performance.now();
  dispatcher.start();
  await done; // every POST answered
  // ... and every delivery recorded as delivered
  for (;;) {
    const left = await ctx.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('app_uid', 'in', apps).where('status', '!=', 'delivered').executeTakeFirstOrThrow();
    if (Number(left.n) === 0) break;
    await new Promise((r) => setImmediate(r));
  }
  const eps = n / ((performance.now() - t) / 1000);
  await dispatcher.stop();
  return eps;
}

try {
  await baseline(Math.min(200, EVENTS)); // warm-up
  expect(Infinity);
  const raw = await baseline(EVENTS);
  const oneApp = await throughput(1, EVENTS);
  const manyApps = await throughput(8, EVENTS);
  const attempts = await ctx.db.selectFrom('webhook_attempts').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const round = (x: number) => Math.round(x * 10) / 10;
  console.log(
    JSON.stringify({
      bench: 'webhooks',
      db: store.dialect,
      events: EVENTS,
      concurrency: CONCURRENCY,
      per_endpoint: PER_ENDPOINT,
      baseline_raw_post_eps: round(raw),
      dispatcher_one_app_eps: round(oneApp),
      dispatcher_8_apps_eps: round(manyApps),
      ratio_8_apps_to_baseline: Math.round((manyApps / raw) * 1000) / 1000,
      attempts_logged: Number(attempts.n),
      node: process.version,
      cpus: os.cpus().length,
    }),
  );
} finally {
  await store.close();
  server.closeAllConnections();
  server.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
