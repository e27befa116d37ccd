// Webhook delivery under load, shared by bench/webhooks.ts and the isolation test: a local receiver with
// one path per App (each can answer 200, answer 500 or hang), the real dispatcher and HTTP sender on a
// real database (SQLite in a temp dir or a fresh PostgreSQL database), events queued as emitEvent
// writes them.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { loadConfig } from '../../src/config/config.js';
import type { Store } from '../../src/store/db.js';
import { openCore } from '../../src/boot/open-core.js';
import { buildContext } from '../../src/boot/context.js';
import type { Ctx } from '../../src/services/context.js';
import { createApp } from '../../src/services/apps/registry.js';
import { emitEvent } from '../../src/services/events.js';
import { setWebhook, webhookDispatcher, type DispatcherOptions } from '../../src/webhooks/index.js';
import { freshPostgres, tempDir } from './env.js';

export const SAMPLE_EVENT_DATA = { asset: { uid: '123456789012', name: 'Sword', metadata: { description: 'x'.repeat(300) } } };
export const SAMPLE_BODY = JSON.stringify({
  event: 'asset.minted',
  event_id: '00000000-0000-0000-0000-000000000000',
  app_uid: '123456789012',
  event_time: new Date().toISOString(),
  sent_at: new Date().toISOString(),
  attempt: 1,
  data: SAMPLE_EVENT_DATA,
});

export type Behaviour = 'ok' | 'fail' | 'hang';

/** One HTTP server; `/<name>` answers per `behaviour[name]` (default ok) and counts what it answered 2xx. */
export class LoadReceiver {
  readonly behaviour = new Map<string, Behaviour>();
  readonly delivered = new Map<string, number>();
  /** performance.now() of the last 2xx answer per path. */
  readonly lastAt = new Map<string, number>();
  private held: http.ServerResponse[] = [];
  private waiters: { name: string | null; n: number; resolve: () => void }[] = [];
  private readonly server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const name = (req.url ?? '/').slice(1);
      const b = this.behaviour.get(name) ?? 'ok';
      if (b === 'hang') return void this.held.push(res);
      if (b === 'fail') return void res.writeHead(500).end('no');
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      this.delivered.set(name, (this.delivered.get(name) ?? 0) + 1);
      this.lastAt.set(name, performance.now());
      this.waiters = this.waiters.filter((w) => (this.count(w.name) >= w.n ? (w.resolve(), false) : true));
    });
  });
  base = '';

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  url(name: string): string {
    return `${this.base}/${name}`;
  }

  /** 2xx answers so far to `name` (null: to every path). */
  count(name: string | null): number {
    if (name !== null) return this.delivered.get(name) ?? 0;
    let n = 0;
    for (const v of this.delivered.values()) n += v;
    return n;
  }

  /** Resolves once `name` (null: all paths together) has answered `n` requests 2xx. */
  until(name: string | null, n: number): Promise<void> {
    if (this.count(name) >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ name, n, resolve }));
  }

  reset(): void {
    this.delivered.clear();
    this.lastAt.clear();
  }

  async stop(): Promise<void> {
    for (const r of this.held.splice(0)) r.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** A context with a real store and no chain: enough for apps, events and the dispatcher. */
export async function webhookContext(db: 'sqlite' | 'postgres'): Promise<{ ctx: Ctx; store: Store; dispose(): Promise<void> }> {
  const dataDir = tempDir('mintworks-webhooks-');
  const pgdb = db === 'postgres' ? await freshPostgres() : null;
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', OUTBOUND_ALLOW_PRIVATE: 'true', ...(pgdb ? { DATABASE_URL: pgdb.url } : {}) });
  const log = pino({ level: 'silent' });
  const core = await openCore(config, log); // migrated store, master key and wallet seed, as the service opens them
  const ctx = buildContext({ config, log, core });
  const store = core.store;
  return {
    ctx,
    store,
    async dispose() {
      await store.close();
      await pgdb?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** `count` new Apps whose webhooks point at `receiver.url(<app uid>)`. */
export async function appsWithWebhooks(ctx: Ctx, receiver: LoadReceiver, count: number): Promise<string[]> {
  const apps: string[] = [];
  for (let i = 0; i < count; i++) {
    const a = await createApp(ctx, `load ${i}`, 'development');
    await setWebhook(ctx, a.uid, { url: receiver.url(a.uid) });
    apps.push(a.uid);
  }
  return apps;
}

/** `perApp` asset.minted events for each App, interleaved, in transactions of 500. */
export async function queueEvents(ctx: Ctx, apps: string[], perApp: number): Promise<void> {
  const n = apps.length * perApp;
  for (let i = 0; i < n; i += 500) {
    await ctx.db.transaction().execute(async (tx) => {
      for (let j = i; j < Math.min(n, i + 500); j++) await emitEvent(tx, apps[j % apps.length], 'asset.minted', SAMPLE_EVENT_DATA);
    });
  }
}

/**
 * Runs the dispatcher until `apps` have received `perApp` deliveries each (and all are recorded as
 * delivered), other Apps' events being there too; returns deliveries per second for `apps`.
 */
export async function deliverAll(ctx: Ctx, receiver: LoadReceiver, apps: string[], perApp: number, opts: DispatcherOptions = {}): Promise<number> {
  const dispatcher = webhookDispatcher(ctx, opts);
  const t = performance.now();
  dispatcher.start();
  try {
    await Promise.all(apps.map((a) => receiver.until(a, perApp)));
    for (;;) {
      const left = await ctx.db
        .selectFrom('webhook_deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('app_uid', 'in', apps)
        .where('status', '!=', 'delivered')
        .executeTakeFirstOrThrow();
      if (Number(left.n) === 0) break;
      await new Promise((r) => setImmediate(r));
    }
    return (apps.length * perApp) / ((performance.now() - t) / 1000);
  } finally {
    await dispatcher.stop();
  }
}
