// Prometheus metrics at GET /metrics: request latency per route, queue depth per job kind, chain head
// and unconfirmed transactions, webhook deliveries by state. Gauges are read from the database at
// scrape time, so every process reports the shared truth and nothing drifts.
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Ctx } from '../services/context.js';
import type { AssetReads } from '../services/assets/cache.js';
import { openDeliveryCounts } from '../webhooks/deliveries.js';

export async function metricsRoutes(app: FastifyInstance<any, any, any, any, any>, ctx: Ctx, assetReads: AssetReads | null = null): Promise<void> {
  const registry = new Registry();
  // prom-client's default metrics already say `process_` / `nodejs_`: mintworks_process_cpu_seconds_total…
  collectDefaultMetrics({ register: registry, prefix: 'mintworks_' });

  const latency = new Histogram({
    name: 'mintworks_http_request_duration_seconds',
    help: 'HTTP request latency by route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  // One child per label set, found by a string key: prom-client would hash the label object on every
  // observation. The sets are few (routes × methods × statuses).
  const series = new Map<string, { observe(v: number): void }>();
  app.addHook('onResponse', async (req, reply) => {
    // The route template, never the raw URL: no uids or query strings (secrets) in label values.
    const route = req.routeOptions?.url ?? 'unmatched';
    const key = `${req.method} ${reply.statusCode} ${route}`;
    let child = series.get(key);
    if (!child) series.set(key, (child = latency.labels({ method: req.method, route, status: String(reply.statusCode) })));
    child.observe(reply.elapsedTime / 1000);
  });

  new Gauge({
    name: 'mintworks_jobs',
    help: 'Durable jobs by kind and status (queued, running, failed)',
    labelNames: ['kind', 'status'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const [key, n] of Object.entries(await ctx.queue.counts())) {
        const i = key.lastIndexOf('.');
        this.set({ kind: key.slice(0, i), status: key.slice(i + 1) }, n);
      }
    },
  });
  new Gauge({
    name: 'mintworks_chain_unconfirmed_transactions',
    help: 'Recorded chain transactions whose outcome is not applied yet',
    registers: [registry],
    async collect() {
      // Every chain's (each sender counts its own chain's).
      const senders = ctx.chains?.size ? [...ctx.chains.values()].map((c) => c.sender) : ctx.sender ? [ctx.sender] : [];
      if (senders.length) this.set((await Promise.all(senders.map((x) => x.pendingCount()))).reduce((x, y) => x + y, 0));
    },
  });
  new Gauge({
    name: 'mintworks_chain_block_number',
    help: 'Latest block number seen on the chain',
    registers: [registry],
    async collect() {
      const n = await ctx.sender?.client.getBlockNumber({ cacheTime: 0 }).catch(() => null);
      if (n != null) this.set(Number(n));
    },
  });
  new Gauge({
    name: 'mintworks_webhook_deliveries',
    help: 'Webhook deliveries still open, by status (pending, disabled); delivered and expired ones are history (see the attempt log)',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await openDeliveryCounts(ctx)) this.set({ status: r.status }, r.n);
    },
  });

  if (assetReads) {
    new Counter({
      name: 'mintworks_asset_reads_total',
      help: 'GET /asset/<uid> answers of this process by where they came from: hit (memory, unchanged since read) or miss (database)',
      labelNames: ['result'] as const,
      registers: [registry],
      collect() {
        this.reset();
        this.inc({ result: 'hit' }, assetReads.counts.hit);
        this.inc({ result: 'miss' }, assetReads.counts.miss);
      },
    });
  }

  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => reply.type(registry.contentType).send(await registry.metrics()));
}
