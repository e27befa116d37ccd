// Prometheus metrics at GET /metrics: request latency per route, queue depth per job kind, chain head
// and unconfirmed transactions, webhook deliveries by state. Gauges are read from the database at
// scrape time, so every process reports the shared truth and nothing drifts.
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import { RequestLatency } from './request-latency.js';
import type { Ctx } from '../services/context.js';
import type { AssetReads } from '../services/assets/cache.js';
import { openDeliveryCounts } from '../webhooks/deliveries.js';
import type { ChainRuntime } from '../chain/runtime.js';
import { PROVIDER_ERROR_KINDS } from '../chain/providers.js';
import type { PoolSnapshot } from '../store/pool-snapshot.js';
import { divergenceCounts } from '../services/verify/watch.js';
import { admissionOf } from '../services/assets/admission.js';
import { threadMemory, type ThreadMemory } from '../util/thread-memory.js';

/**
 * Where the creates answered by the creates' thread waited, summed in seconds, with how many:
 * `written`, from the hand-over to the thread's answer (the group being written before theirs, then
 * their own); `flushed`, from that answer until the WAL holding it was on disk (nothing to wait for on
 * PostgreSQL).
 */
export interface CreatesWaits {
  written: StageWait;
  flushed: StageWait;
}
/** Seconds waited at a stage, summed over the creates counted. */
type StageWait = { seconds: number; count: number };

/** What the process holds in memory, as its parts report it (each optional: a bare process has none of them). */
export interface ProcessGauges {
  /** The heap of each thread of the process; the main thread's alone when not given. */
  threads?: () => ThreadMemory[];
  /** Creates handed to the creates' thread and not answered yet. */
  createsInFlight?: () => number;
  /** Where the creates' thread's answered creates waited (null without the thread). */
  createsWaits?: () => CreatesWaits | null;
}

// Long: one registration per metric, a short entry each.
export async function metricsRoutes(
  app: FastifyInstance<any, any, any, any, any>,
  ctx: Ctx,
  assetReads: AssetReads<{ length: number }> | null = null,
  runtimes: ChainRuntime[] = [],
  poolStats?: () => PoolSnapshot,
  gauges: ProcessGauges = {},
): Promise<void> {
  const registry = new Registry();
  // prom-client's default metrics already say `process_` / `nodejs_`: mintworks_process_cpu_seconds_total…
  collectDefaultMetrics({ register: registry, prefix: 'mintworks_' });

  const latency = new RequestLatency(
    'mintworks_http_request_duration_seconds',
    'HTTP request latency by route template and status',
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  );
  // A registry asks a metric only for its name, `get()` and `reset()`: RequestLatency has those.
  registry.registerMetric(latency as unknown as Metric);
  // Callback-style: an async hook costs every request a promise.
  app.addHook('onResponse', (req, reply, done) => {
    // The route template, never the raw URL: no uids or query strings (secrets) in label values.
    latency.observe(req.method, req.routeOptions?.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
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

  memoryMetrics(registry, ctx, gauges, assetReads);
  divergenceMetrics(registry, ctx);
  chainMetrics(registry, runtimes);
  if (poolStats) poolMetrics(registry, poolStats);

  if (assetReads) {
    new Counter({
      name: 'mintworks_asset_reads_total',
      help: 'Asset objects answered by this process (GET /asset/<uid>, the pages of GET /asset?user_uid) by where they came from: hit (memory, unchanged since read) or miss (database); page_hit: a page answered whole from memory, page_shared: a page answered by the read of the same page under way for another request, page_miss: a page joined anew',
      labelNames: ['result'] as const,
      registers: [registry],
      collect() {
        this.reset();
        this.inc({ result: 'hit' }, assetReads.counts.hit);
        this.inc({ result: 'miss' }, assetReads.counts.miss);
        this.inc({ result: 'page_hit' }, assetReads.counts.pageHit);
        this.inc({ result: 'page_shared' }, assetReads.counts.pageShared);
        this.inc({ result: 'page_miss' }, assetReads.counts.pageMiss);
      },
    });
  }

  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => reply.type(registry.contentType).send(await registry.metrics()));
}

/**
 * The heap of each thread, and what POST /asset holds while it answers (the queues in memory: the
 * durable job queue is `mintworks_jobs`).
 * Long: one registration per metric, a short entry each.
 */
function memoryMetrics(registry: Registry, ctx: Ctx, gauges: ProcessGauges, assetReads: AssetReads<{ length: number }> | null): void {
  const threads = gauges.threads ?? (() => [threadMemory('api')]);
  new Gauge({
    name: 'mintworks_thread_heap_bytes',
    help: "V8 heap of each thread of this process (api, creates, workers), by space: used, total (reserved), external (buffers outside it); the creates' and workers' as they last reported it (every 2 s)",
    labelNames: ['thread', 'space'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const m of threads()) {
        this.set({ thread: m.thread, space: 'used' }, m.heapUsed);
        this.set({ thread: m.thread, space: 'total' }, m.heapTotal);
        this.set({ thread: m.thread, space: 'external' }, m.external);
      }
    },
  });
  const admission = admissionOf(ctx);
  new Gauge({
    name: 'mintworks_creates_held',
    help: 'Creates (POST /asset, /asset/batch) accepted by this process and not answered yet: requests, and bytes of their bodies (CREATES_QUEUE_MB bounds the bytes)',
    labelNames: ['unit'] as const,
    registers: [registry],
    collect() {
      const s = admission.snapshot();
      this.set({ unit: 'requests' }, s.creates);
      this.set({ unit: 'bytes' }, s.bytes);
    },
  });
  new Gauge({
    name: 'mintworks_creates_thread_in_flight',
    help: "Creates handed to the creates' thread and not answered by it yet",
    registers: [registry],
    collect() {
      this.set(gauges.createsInFlight?.() ?? 0);
    },
  });
  createsWaitMetrics(registry, gauges.createsWaits);
  new Counter({
    name: 'mintworks_creates_refused_total',
    help: 'Creates answered 503 overloaded, by reason: queue (CREATES_QUEUE_MB) or memory (MEMORY_LIMIT_MB)',
    labelNames: ['reason'] as const,
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ reason: 'queue' }, admission.refused.queue);
      this.inc({ reason: 'memory' }, admission.refused.memory);
    },
  });
  if (assetReads) {
    new Gauge({
      name: 'mintworks_asset_cache',
      help: 'Asset objects kept in memory by this process: entries and their bytes (ASSET_CACHE_ENTRIES, ASSET_CACHE_MB); pages kept whole and their bytes (at most a quarter of ASSET_CACHE_MB more)',
      labelNames: ['unit'] as const,
      registers: [registry],
      collect() {
        const s = assetReads.size();
        this.set({ unit: 'entries' }, s.entries);
        this.set({ unit: 'bytes' }, s.bytes);
        this.set({ unit: 'pages' }, s.pages);
        this.set({ unit: 'page_bytes' }, s.pageBytes);
      },
    });
  }
}

/** Records that disagree with the chain, per chain, as the workers' background verification last found them. */
function divergenceMetrics(registry: Registry, ctx: Ctx): void {
  new Gauge({
    name: 'mintworks_chain_divergences',
    help: "Records that disagree with the chain, as the workers' background verification last found them (CHAIN_VERIFY_INTERVAL_SECONDS)",
    labelNames: ['chain'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await divergenceCounts(ctx)) this.set({ chain: String(r.chain_id) }, r.count);
    },
  });
}

/** PostgreSQL: the connections of this process's pool (its main thread's), and the waits for one. */
function poolMetrics(registry: Registry, stats: () => PoolSnapshot): void {
  new Gauge({
    name: 'mintworks_db_pool_connections',
    help: "Connections of this process's database pool, by state (open, idle, max: DATABASE_POOL_SIZE)",
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const s = stats();
      this.set({ state: 'open' }, s.open);
      this.set({ state: 'idle' }, s.idle);
      this.set({ state: 'max' }, s.max);
    },
  });
  new Gauge({
    name: 'mintworks_db_pool_waiting',
    help: 'Queries waiting for a connection of the pool right now',
    registers: [registry],
    collect() {
      this.set(stats().waiting);
    },
  });
  new Counter({
    name: 'mintworks_db_pool_waits_total',
    help: 'Connections handed out only after a wait (every connection of the pool was busy)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(stats().waits);
    },
  });
  new Counter({
    name: 'mintworks_db_pool_wait_seconds_total',
    help: 'Time spent waiting for a connection of the pool',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(stats().wait_ms / 1000);
    },
  });
}

/**
 * Where creates waited in the creates' thread's pipeline, by stage: `written` (handed over until the
 * thread answered: the group being written before theirs, then their own) and `flushed` (until the
 * SQLite WAL holding them was on disk). A slow disk shows in `flushed`, a busy writer in `written`.
 */
function createsWaitMetrics(registry: Registry, waits: ProcessGauges['createsWaits']): void {
  const stages = ['written', 'flushed'] as const;
  const parts = [
    {
      suffix: 'sum',
      help: "Time answered creates waited in the creates' thread's pipeline, by stage: written (handed over until the thread answered, its flush aside) and flushed (the thread's flush of the WAL holding them, before it answered); divided by mintworks_creates_wait_seconds_count it is the mean",
      of: (t: StageWait) => t.seconds,
    },
    { suffix: 'count', help: "Creates answered through the creates' thread, by stage timed", of: (t: StageWait) => t.count },
  ];
  for (const { suffix, help, of } of parts)
    new Counter({
      name: `mintworks_creates_wait_seconds_${suffix}`,
      help,
      labelNames: ['stage'] as const,
      registers: [registry],
      collect() {
        this.reset();
        const w = waits?.();
        for (const stage of stages) this.inc({ stage }, w ? of(w[stage]) : 0);
      },
    });
}

/**
 * Per chain: each JSON-RPC provider's calls, errors (by kind), time spent and state (counted in this
 * process's threads), and each relayer's balance against the chain's low-balance threshold.
 * Long: one registration per metric, a short entry each.
 */
function chainMetrics(registry: Registry, runtimes: ChainRuntime[]): void {
  if (runtimes.length === 0) return;
  const snapshots = () => runtimes.flatMap((rt) => rt.providerSnapshot());
  const labels = ['chain', 'provider'] as const;
  new Counter({
    name: 'mintworks_chain_rpc_calls_total',
    help: 'JSON-RPC calls per chain and provider (each try of a call that failed over counts on its provider)',
    labelNames: labels,
    registers: [registry],
    collect() {
      this.reset();
      for (const s of snapshots()) this.inc({ chain: String(s.chain_id), provider: s.provider }, s.calls);
    },
  });
  new Counter({
    name: 'mintworks_chain_rpc_errors_total',
    help: 'JSON-RPC calls a provider failed, by kind: timeout, connection, http_429, http_5xx, http_other (node answers such as reverts are not errors of the provider)',
    labelNames: [...labels, 'kind'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const s of snapshots()) for (const kind of PROVIDER_ERROR_KINDS) this.inc({ chain: String(s.chain_id), provider: s.provider, kind }, s.errors[kind]);
    },
  });
  new Counter({
    name: 'mintworks_chain_rpc_latency_seconds_sum',
    help: 'Time spent in JSON-RPC calls per provider; divided by mintworks_chain_rpc_latency_seconds_count it is the mean latency',
    labelNames: labels,
    registers: [registry],
    collect() {
      this.reset();
      for (const s of snapshots()) this.inc({ chain: String(s.chain_id), provider: s.provider }, s.latency_sum_ms / 1000);
    },
  });
  new Counter({
    name: 'mintworks_chain_rpc_latency_seconds_count',
    help: 'JSON-RPC calls timed per provider',
    labelNames: labels,
    registers: [registry],
    collect() {
      this.reset();
      for (const s of snapshots()) this.inc({ chain: String(s.chain_id), provider: s.provider }, s.latency_count);
    },
  });
  new Gauge({
    name: 'mintworks_chain_rpc_provider_up',
    help: '1 while a provider answers (up), 0 while it is avoided (degraded, down or rate limited)',
    labelNames: labels,
    registers: [registry],
    collect() {
      this.reset();
      for (const s of snapshots()) this.set({ chain: String(s.chain_id), provider: s.provider }, s.state === 'up' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'mintworks_relayer_balance_low',
    help: "1 while a relayer's balance is under its chain's low-balance threshold",
    labelNames: ['chain', 'relayer'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const h of await Promise.all(runtimes.map((rt) => rt.health().catch(() => null)))) {
        for (const a of h?.accounts ?? [])
          if (a.role === 'relayer' && a.balance_wei !== null) this.set({ chain: String(h!.chain_id), relayer: a.address }, a.low ? 1 : 0);
      }
    },
  });
}
