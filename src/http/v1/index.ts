// The public API, under /v1 (docs/api.md): the scope's checks before routing (the App's key and token,
// rate limits, JSON bodies, Idempotency-Key), then one module per resource. Handlers read as the use
// case: validate, call the service, envelope.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Ctx } from '../../services/context.js';
import { ApiError } from '../../util/errors.js';
import { notFound } from '../kit/envelope.js';
import type { Idempotency } from '../kit/idempotency.js';
import type { AssetJsonCache } from '../../services/assets/reads.js';
import { areaDocs, documentArea } from '../kit/openapi.js';
import { userRoutes, usersDocs } from './users.js';
import { collectionRoutes, collectionsDocs } from './collections.js';
import { assetRoutes, assetsDocs } from './assets.js';
import { transferRoutes, transfersDocs } from './transfers.js';
import { burnRoutes, burnsDocs } from './burns.js';
import { depositDocs, depositRoutes } from './deposit.js';
import { rewardRoutes, rewardsDocs } from './rewards.js';
import { itemRoutes, itemsDocs } from './items.js';

export const V1_PREFIX = '/v1';

/** Every /v1 route's doc, in the order of the OpenAPI document's paths. */
export const V1_DOCS = areaDocs(V1_PREFIX, usersDocs, collectionsDocs, assetsDocs, transfersDocs, burnsDocs, depositDocs, rewardsDocs, itemsDocs);

export interface V1Deps {
  ctx: Ctx;
  /** Credentials and rate limits (src/http/kit/guard.ts); the server also runs it for URLs it cannot route. */
  guard: (req: FastifyRequest, reply: FastifyReply) => void | Promise<void>;
  idempotency: Idempotency;
  /** GET /asset/<uid> from memory while unchanged; null: always from the database. */
  assetReads: AssetJsonCache | null;
}

export async function v1Api(app: FastifyInstance<any, any, any, any, any>, deps: V1Deps): Promise<void> {
  await app.register(
    async (v1) => {
      documentArea(v1, V1_DOCS);
      // Before routing (unknown paths included), in this order: credentials and rate limits; then, for
      // a write, its body's type and its Idempotency-Key's syntax. One hook, callback-style, with no
      // promise unless the credentials need verifying: each promise is a turn of the event loop's
      // microtasks on every request, reads included.
      const afterGuard = (req: FastifyRequest): void => {
        if (req.method !== 'POST' && req.method !== 'PUT') return;
        // Bodies are JSON: anything else is refused before it could be misread as an empty object.
        const type = req.headers['content-type'];
        if (type && !/^application\/json\b/i.test(type)) throw ApiError.of('unsupported_media_type');
        deps.idempotency.checkHeader(req);
      };
      v1.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
        const checkWrite = () => {
          try {
            afterGuard(req);
          } catch (err) {
            return done(err as Error);
          }
          done();
        };
        let verifying: void | Promise<void>;
        try {
          verifying = deps.guard(req, reply);
        } catch (err) {
          return done(err as Error);
        }
        if (verifying) verifying.then(checkWrite, done);
        else checkWrite();
      });
      // Replay, refuse or record: only writes carry an Idempotency-Key, so only their routes run it.
      v1.addHook('onRoute', (route) => {
        const methods = ([] as string[]).concat(route.method);
        if (!methods.includes('POST') && !methods.includes('PUT')) return;
        route.preValidation = [...([] as any[]).concat(route.preValidation ?? []), deps.idempotency.begin];
      });
      v1.setNotFoundHandler(async () => {
        throw notFound();
      });
      const routes = v1.withTypeProvider<ZodTypeProvider>();
      // The order of the OpenAPI document's paths.
      await userRoutes(routes, deps.ctx);
      await collectionRoutes(routes, deps.ctx);
      await assetRoutes(routes, deps.ctx, deps.assetReads);
      await transferRoutes(routes, deps.ctx);
      await burnRoutes(routes, deps.ctx);
      await depositRoutes(routes, deps.ctx);
      await rewardRoutes(routes, deps.ctx);
      await itemRoutes(routes, deps.ctx);
    },
    { prefix: V1_PREFIX },
  );
}
