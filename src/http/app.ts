// The HTTP server: public API under /v1 (docs/api.md), management under /admin/v1, token metadata, health,
// OpenAPI. Every failure answers in the error envelope; logs never carry secrets or query strings.
import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import type { Ctx } from '../services/context.js';
import { ApiError } from '../util/errors.js';
import { publicRoutes } from './public.js';
import { adminRoutes, operatorGuard } from './admin.js';
import { miscRoutes, type Health } from './misc.js';
import { metricsRoutes } from './metrics.js';
import { documentRoutes, OPENAPI_INFO, SECURITY_SCHEMES } from './openapi.js';
import { metadataRoutes } from '../metadata/routes.js';
import { ApiKeyResolver } from '../services/apps.js';
import { dbCounterStore, WindowCounters } from '../services/rate-limits.js';
import { apiGuard } from './guard.js';
import { Idempotency } from './idempotency.js';
import { bodyText, parseJsonBody } from './json-body.js';
import { clientErrorHandler, closingGuard, errorHandler, frameworkErrors, notFound, redactQuery } from './envelope.js';

export { redactQuery };
import { consoleRoutes } from '../console/index.js';

const PROBES = new Set(['/health', '/metrics']);

export interface HttpDeps {
  ctx: Ctx;
  health: () => Promise<Health>;
  logger: Logger;
}

/** Which guarded area a raw URL is in (Fastify collapses duplicate slashes when routing, so do we). */
function areaOf(url: string): 'v1' | 'admin' | null {
  const path = url.split('?', 1)[0].replace(/\/{2,}/g, '/');
  if (path === '/v1' || path.startsWith('/v1/')) return 'v1';
  if (path === '/admin/v1' || path.startsWith('/admin/v1/')) return 'admin';
  return null;
}

export async function buildHttp(deps: HttpDeps): Promise<FastifyInstance> {
  const { ctx } = deps;
  const resolver = new ApiKeyResolver(ctx);
  const counters = ctx.config.rateLimit > 0 || ctx.config.authFailureLimit > 0 ? new WindowCounters(dbCounterStore(ctx), { log: deps.logger.child({ component: 'rate-limits' }) }) : null;
  const v1Guard = apiGuard(resolver, counters, { perKey: ctx.config.rateLimit, authFailures: ctx.config.authFailureLimit });
  const adminGuard = operatorGuard(ctx);
  const idempotency = new Idempotency(ctx);
  const closing = closingGuard();

  const app = Fastify({
    loggerInstance: deps.logger.child({ component: 'http' }) as any,
    // Fastify's own request lines would carry raw URLs (query strings hold secrets): we log our own.
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { ignoreDuplicateSlashes: true, ignoreTrailingSlash: false },
    bodyLimit: 1024 * 1024,
    // X-Forwarded-For is believed only from the configured proxies: anyone else could forge it to
    // escape the per-address limit on failed authentication.
    trustProxy: ctx.config.trustProxy.length > 0 ? ctx.config.trustProxy : false,
    // Fastify's 503, bad-URL and client-error answers are not in the envelope: ours are.
    return503OnClosing: false,
    frameworkErrors: frameworkErrors(async (req, reply) => {
      const area = areaOf(req.url);
      if (area === 'v1') await v1Guard(req, reply);
      else if (area === 'admin') await adminGuard(req);
    }),
    clientErrorHandler,
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.addHook('preClose', closing.preClose);
  app.addHook('onRequest', closing.onRequest);

  // JSON bodies (src/http/json-body.ts): UTF-8 only, an empty body is {}, amount literals read exactly.
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

  app.addHook('onResponse', async (req, reply) => {
    const line = { method: req.method, url: redactQuery(req.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime) };
    // Probes (load balancers, Prometheus) would drown the rest: their requests are logged at debug.
    if (PROBES.has(req.routeOptions?.url ?? '') && reply.statusCode < 500) req.log.debug(line, 'request');
    else req.log.info(line, 'request');
  });

  app.setErrorHandler(errorHandler(idempotency));
  app.setNotFoundHandler(async () => {
    throw notFound();
  });

  await metricsRoutes(app, ctx); // before the route plugins: they inherit its onResponse hook
  documentRoutes(app); // summaries, response schemas and security of each route (src/http/openapi.ts)
  await app.register(swagger, {
    openapi: {
      info: OPENAPI_INFO,
      servers: [{ url: deps.ctx.config.publicUrl }],
      components: { securitySchemes: SECURITY_SCHEMES as any },
      security: [{ apiKey: [], bearer: [] }],
    },
    transform: jsonSchemaTransform,
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  await app.register(
    async (v1) => {
      // Before routing (unknown paths included): credentials and rate limits.
      v1.addHook('onRequest', v1Guard);
      // Bodies are JSON: anything else is refused before it could be misread as an empty object.
      v1.addHook('onRequest', async (req: FastifyRequest) => {
        if ((req.method === 'POST' || req.method === 'PUT') && req.headers['content-type'] && !/^application\/json\b/i.test(req.headers['content-type'])) {
          throw ApiError.client(415, 'unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
        }
      });
      v1.addHook('onRequest', idempotency.checkHeader);
      v1.addHook('preValidation', idempotency.begin);
      v1.setNotFoundHandler(async () => {
        throw notFound();
      });
      await publicRoutes(v1.withTypeProvider<ZodTypeProvider>(), deps.ctx);
    },
    { prefix: '/v1' },
  );
  await app.register(
    async (admin) => {
      // The operator token, checked on the scope itself before routing: every route under /admin/v1
      // (whichever file declares it) and every unknown path there is behind it by construction.
      admin.addHook('onRequest', adminGuard);
      await adminRoutes(admin.withTypeProvider<ZodTypeProvider>(), deps.ctx);
    },
    { prefix: '/admin/v1' },
  );
  await miscRoutes(app, deps.ctx, deps.health);
  await metadataRoutes(app, deps.ctx); // GET /files/<sha256>, GET /ipfs/<cid>
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
