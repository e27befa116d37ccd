// The HTTP server: public API under /v1 (API.md), management under /admin/v1, token metadata, health,
// OpenAPI. Every failure answers in the error envelope; logs never carry secrets or query strings.
import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { hasZodFastifySchemaValidationErrors, jsonSchemaTransform, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import type { Ctx } from '../services/context.js';
import { ApiError, errorBody } from '../util/errors.js';
import { publicRoutes } from './public.js';
import { adminRoutes } from './admin.js';
import { miscRoutes, type Health } from './misc.js';
import { metricsRoutes } from './metrics.js';
import { metadataRoutes } from '../metadata/routes.js';
import { ApiKeyResolver } from '../services/apps.js';
import { authenticate } from './auth.js';
import { consoleRoutes } from '../console/index.js';

export interface HttpDeps {
  ctx: Ctx;
  health: () => Promise<Health>;
  logger: Logger;
}

/** Drops the query string from URLs that reach logs: one SDK puts api_secret in every query. */
export function redactQuery(url: string): string {
  const i = url.indexOf('?');
  return i < 0 ? url : `${url.slice(0, i)}?<redacted>`;
}

export async function buildHttp(deps: HttpDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger.child({ component: 'http' }) as any,
    // Fastify's own request lines would carry raw URLs (query strings hold secrets): we log our own.
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { ignoreDuplicateSlashes: true, ignoreTrailingSlash: false },
    bodyLimit: 1024 * 1024,
    trustProxy: true,
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);

  // An empty body with Content-Type: application/json means {} (one SDK sends that for POST /user).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const s = (body as string).trim();
    if (s === '') return done(null, {});
    try {
      done(null, JSON.parse(s));
    } catch {
      done(ApiError.client(400, 'invalid_json', 'Request body is not valid JSON.'), undefined);
    }
  });

  app.addHook('onResponse', async (req, reply) => {
    req.log.info({ method: req.method, url: redactQuery(req.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });

  app.setErrorHandler((err: FastifyError | ApiError, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof ApiError) return reply.code(err.status).send(err.toBody());
    if (hasZodFastifySchemaValidationErrors(err)) {
      const fields = err.validation.map((v) => ({
        field: v.instancePath.replace(/^\//, '').replace(/\//g, '.') || (err.validationContext ?? 'body'),
        code: v.keyword === 'invalid_type' && v.message === 'This field is required.' ? 'required' : 'invalid',
        message: v.message ?? 'Invalid value.',
      }));
      return reply.code(400).send(ApiError.validation(fields).toBody());
    }
    const status = err.statusCode && err.statusCode >= 400 ? err.statusCode : 500;
    if (status >= 500) req.log.error({ err, url: redactQuery(req.url) }, 'request failed');
    const message = status === 413 ? 'Request body is too large.' : status >= 500 ? 'Internal server error.' : err.message;
    const code = status === 413 ? 'payload_too_large' : status === 415 ? 'unsupported_media_type' : status >= 500 ? 'internal_error' : 'bad_request';
    return reply.code(status).send(errorBody(status, code, message));
  });

  app.setNotFoundHandler((_req, reply) => reply.code(404).send(errorBody(404, 'not_found', 'Not Found')));

  await metricsRoutes(app, deps.ctx); // before the route plugins: they inherit its onResponse hook
  await app.register(swagger, {
    openapi: {
      info: { title: 'Mintworks API', version: '1.0.0', description: 'Wire-compatible asset minting API. See README and API.md.' },
      servers: [{ url: deps.ctx.config.publicUrl }],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY' },
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (HS256, key = API secret)' },
        },
      },
      security: [{ apiKey: [], bearer: [] }],
    },
    transform: jsonSchemaTransform,
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  const resolver = new ApiKeyResolver(deps.ctx);
  await app.register(
    async (v1) => {
      v1.addHook('onRequest', authenticate(resolver));
      // Bodies are JSON: anything else is refused before it could be misread as an empty object.
      v1.addHook('onRequest', async (req) => {
        if ((req.method === 'POST' || req.method === 'PUT') && req.headers['content-type'] && !/^application\/json\b/i.test(req.headers['content-type'])) {
          throw ApiError.client(415, 'unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
        }
      });
      await publicRoutes(v1.withTypeProvider<ZodTypeProvider>(), deps.ctx);
    },
    { prefix: '/v1' },
  );
  await app.register(async (admin) => adminRoutes(admin.withTypeProvider<ZodTypeProvider>(), deps.ctx), { prefix: '/admin/v1' });
  await miscRoutes(app, deps.ctx, deps.health);
  await metadataRoutes(app, deps.ctx); // GET /files/<sha256>, GET /ipfs/<cid>
  await consoleRoutes(app, deps); // the developer console: /console (browser app) and /console/api
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}
