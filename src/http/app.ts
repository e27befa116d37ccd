// The HTTP server: public API under /v1 (src/http/v1, docs/api.md), management under /admin/v1
// (src/http/admin), token metadata and files, the site's root and health, the explorer, metrics, the
// console, OpenAPI (the document at /openapi.json; its reader at /docs, served with the console).
// Every failure answers in the error envelope; logs never carry secrets or query strings.
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest, type RouteOptions } from 'fastify';
import swagger from '@fastify/swagger';
import { jsonSchemaTransform, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import type { Ctx } from '../services/context.js';
import { v1Api, V1_PREFIX } from './v1/index.js';
import { adminApi, ADMIN_PREFIX } from './admin/index.js';
import { operatorGuard } from './admin/operator-token.js';
import { rootRoutes, type Health } from './root.js';
import { metadataRoutes } from './metadata.js';
import { explorerRoutes } from './explorer.js';
import { metricsRoutes } from './metrics.js';
import { exactJsonReplies, namedSchemas, OPENAPI_INFO, SECURITY_SCHEMES } from './kit/openapi.js';
import { ApiKeyResolver } from '../services/apps/registry.js';
import { dbCounterStore, WindowCounters } from '../services/requests/rate-limits.js';
import { apiGuard } from './kit/guard.js';
import { Idempotency } from './kit/idempotency.js';
import { bodyText, parseJsonBody } from './kit/json-body.js';
import { badUrl, clientErrorHandler, closingGuard, errorHandler, frameworkErrors, isUtf8Url, notFound, redactQuery } from './kit/envelope.js';
import { lazyChildLogger } from './kit/lazy-logger.js';

/** The routes of each server built here, as registered, with their schemas (the tests walk them all: audit, text checks). */
export const routesOf = new WeakMap<object, RouteOptions[]>();

function listRoutes(app: FastifyInstance<any, any, any, any, any>): void {
  const list: RouteOptions[] = [];
  routesOf.set(app, list);
  app.addHook('onRoute', (route) => void list.push(route as RouteOptions));
}

export { redactQuery };
import { consoleRoutes } from './console/index.js';
import { AssetReads } from '../services/assets/cache.js';
import type { ChangeFeed } from '../store/row-versions.js';
import type { PoolSnapshot } from '../store/pool-snapshot.js';
import { assetJsonByUid, getAssetJson, type AssetJsonCache } from '../services/assets/reads.js';
import type { ChainRuntime } from '../chain/runtime.js';
import type { ThreadMemory } from '../util/thread-memory.js';
import type { CreatesWaits } from './metrics.js';

const PROBES = new Set(['/health', '/metrics']);

/**
 * Requests logged at debug unless they fail: probes (load balancers, Prometheus), and the console's
 * reads, which an open console repeats every few seconds (its writes stay at info).
 */
function quietRequest(method: string, route: string): boolean {
  return PROBES.has(route) || ((method === 'GET' || method === 'HEAD') && (route.startsWith('/console/api/') || route.startsWith('/console/')));
}

export interface HttpDeps {
  ctx: Ctx;
  health: () => Promise<Health>;
  logger: Logger;
  /** What keeps cached reads current (src/services/assets/cache.ts); null: every read goes to the database. */
  changes?: ChangeFeed | null;
  /** The chains served, for /metrics (providers, balances) and the operator's chain routes. */
  runtimes?: ChainRuntime[];
  /** PostgreSQL: the pool's connections and waits, for /metrics. */
  poolStats?: () => PoolSnapshot;
  /** The heap of each of the process's threads, for /metrics (the main thread's alone when not given). */
  threads?: () => ThreadMemory[];
  /** Creates handed to the creates' thread and not answered yet, for /metrics. */
  createsInFlight?: () => number;
  /** Where the creates' thread's answered creates waited, for /metrics. */
  createsWaits?: () => CreatesWaits | null;
}

/** GET /asset/<uid> and the assets of GET /asset?user_uid from memory, kept current by the store's change feed. */
function cachedAssetReads(ctx: Ctx, changes: ChangeFeed | null): AssetJsonCache | null {
  const max = ctx.config.assetCacheEntries;
  if (max === 0 || !changes) return null;
  return new AssetReads<string, Buffer>({
    read: (appUid, uid) => getAssetJson(ctx, appUid, uid),
    readMany: (appUid, uids) => assetJsonByUid(ctx, appUid, uids),
    caughtUp: () => changes.caughtUp(),
    max,
    maxBytes: ctx.config.assetCacheMb * 1024 * 1024,
  });
}

/** Which guarded area a raw URL is in (Fastify collapses duplicate slashes when routing, so do we). */
function areaOf(url: string): 'v1' | 'admin' | null {
  const path = url.split('?', 1)[0].replace(/\/{2,}/g, '/');
  if (path === V1_PREFIX || path.startsWith(`${V1_PREFIX}/`)) return 'v1';
  if (path === ADMIN_PREFIX || path.startsWith(`${ADMIN_PREFIX}/`)) return 'admin';
  return null;
}

/** A line per answered request (ours: Fastify's own would carry raw URLs, and query strings hold secrets). */
function logRequests(app: FastifyInstance<any, any, any, any, any>): void {
  // Callback-style: an async hook costs every request a promise.
  app.addHook('onResponse', (req, reply, done) => {
    // Probes and the console's polling would drown the rest: their requests are logged at debug.
    const level = quietRequest(req.method, req.routeOptions?.url ?? '') && reply.statusCode < 500 ? 'debug' : 'info';
    // The line is not built for nobody (LOG_LEVEL=warn under load).
    if ((req.log as Logger).isLevelEnabled(level))
      req.log[level]({ method: req.method, url: redactQuery(req.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
    done();
  });
}

// Long: hooks and scopes are registered in the order a request passes them.
export async function buildHttp(deps: HttpDeps): Promise<FastifyInstance> {
  const { ctx } = deps;
  const resolver = new ApiKeyResolver(ctx);
  const counters =
    ctx.config.rateLimit > 0 || ctx.config.authFailureLimit > 0
      ? new WindowCounters(dbCounterStore(ctx), { log: deps.logger.child({ component: 'rate-limits' }) })
      : null;
  const v1Guard = apiGuard(resolver, counters, { perKey: ctx.config.rateLimit, authFailures: ctx.config.authFailureLimit });
  // URLs the router cannot take never reach a scope's hooks: their area's check runs here instead.
  const adminGuard = operatorGuard(ctx);
  const idempotency = new Idempotency(ctx);
  const closing = closingGuard();
  const assetReads = cachedAssetReads(ctx, deps.changes ?? null);

  const areaGuard = async (req: FastifyRequest, reply: FastifyReply) => {
    const area = areaOf(req.url);
    if (area === 'v1') await v1Guard(req, reply);
    else if (area === 'admin') await adminGuard(req, reply);
  };

  const app = Fastify({
    loggerInstance: deps.logger.child({ component: 'http' }) as any,
    // Fastify's own request lines would carry raw URLs (query strings hold secrets): we log our own.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyChildLogger, // a request's logger is made when it first logs
    routerOptions: { ignoreDuplicateSlashes: true, ignoreTrailingSlash: false },
    bodyLimit: 1024 * 1024,
    // X-Forwarded-For is believed only from the configured proxies: anyone else could forge it to
    // escape the per-address limit on failed authentication.
    trustProxy: ctx.config.trustProxy.length > 0 ? ctx.config.trustProxy : false,
    // Fastify's 503, bad-URL and client-error answers are not in the envelope: ours are.
    return503OnClosing: false,
    frameworkErrors: frameworkErrors(areaGuard),
    clientErrorHandler,
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  listRoutes(app);
  app.addHook('preClose', () => closing.preClose(app.server));
  // Callback-style: an async hook costs every request a promise.
  app.addHook('onRequest', (req, reply, done) => {
    if (closing.closing()) {
      closing.refuse(reply); // answered: the request goes no further
      return;
    }
    // A query string that is not UTF-8 is refused as a path that is not is (after its area's checks).
    if (isUtf8Url(req.url)) return done();
    areaGuard(req, reply).then(() => done(badUrl()), done);
  });

  // JSON bodies (src/http/kit/json-body.ts): UTF-8 only, an empty body is {}, amount literals read exactly.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    try {
      const text = bodyText(body as Buffer);
      req.rawBody = text; // the Idempotency-Key fingerprint covers the exact body
      done(null, parseJsonBody(text, req.routeOptions.config?.exactNumbers));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  logRequests(app);

  app.setErrorHandler(errorHandler(idempotency));
  app.setNotFoundHandler(async () => {
    throw notFound();
  });

  await metricsRoutes(app, ctx, assetReads, deps.runtimes ?? [], deps.poolStats, deps); // before the route plugins: they inherit its onResponse hook; deps has the process's gauges
  exactJsonReplies(app); // each area documents its own routes (src/http/kit/openapi.ts documentArea)
  await app.register(swagger, {
    openapi: {
      info: OPENAPI_INFO,
      servers: [{ url: deps.ctx.installation.publicUrl }],
      components: { securitySchemes: SECURITY_SCHEMES as any },
      security: [{ apiKey: [], bearer: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: namedSchemas,
  });

  await v1Api(app, { ctx, guard: v1Guard, idempotency, assetReads });
  await adminApi(app, ctx, deps.runtimes ?? []); // checks the operator token on its own scope
  await rootRoutes(app, ctx, deps.health); // GET /, GET /health
  await metadataRoutes(app, ctx); // GET /metadata/<collection>/<token>, /files/<sha256>, /ipfs/<cid>
  await explorerRoutes(app, ctx); // /explorer on chains without an explorer of their own
  await consoleRoutes(app, deps); // the developer console: /console (browser app) and /console/api
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  counters?.start();
  idempotency.startSweeper();
  app.addHook('onClose', async () => {
    idempotency.stop();
    await counters?.stop();
  });
  return app;
}
