// Routes outside the API: health, token metadata documents, a minimal explorer for the embedded chain.
import type { FastifyInstance } from 'fastify';
import type { Ctx } from '../services/context.js';
import { tokenMetadata } from '../services/assets.js';
import { errorBody } from '../util/errors.js';
import { isUid } from '../util/ids.js';

export interface Health {
  ready: boolean;
  [k: string]: unknown;
}

export async function miscRoutes(app: FastifyInstance<any, any, any, any, any>, ctx: Ctx, health: () => Promise<Health>): Promise<void> {
  app.get('/health', { schema: { hide: true } }, async (_req, reply) => {
    const h = await health();
    return reply.code(h.ready ? 200 : 503).send(h);
  });

  // tokenURI of development Apps' collections: baseURI (= PUBLIC_URL/metadata/<collection>/) + token id.
  app.get<{ Params: { collection: string; token: string } }>('/metadata/:collection/:token', { schema: { hide: true } }, async (req, reply) => {
    const { collection, token } = req.params;
    const id = Number(token);
    const doc = isUid(collection) && Number.isSafeInteger(id) && id > 0 ? await tokenMetadata(ctx, collection, id) : null;
    if (!doc) return reply.code(404).send(errorBody(404, 'not_found', 'Token not found.'));
    // Editable: a short cache so an edit shows up soon; the ETag lets clients revalidate cheaply.
    return reply.header('cache-control', 'public, max-age=60').type('application/json').send(doc);
  });
}
