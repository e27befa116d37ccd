// The root of the site, outside the API: GET / (where the documentation and the console are) and
// GET /health (readiness, for load balancers and operators).
import type { FastifyInstance } from 'fastify';
import type { Ctx } from '../services/context.js';
import { page, sendHtml, wantsHtml } from './kit/html-page.js';

export interface Health {
  ready: boolean;
  [k: string]: unknown;
}

export async function rootRoutes(app: FastifyInstance<any, any, any, any, any>, ctx: Ctx, health: () => Promise<Health>): Promise<void> {
  // The front door: where the documentation and the console are (JSON for scripts, a page for browsers).
  app.get('/', { schema: { hide: true } }, async (req, reply) => {
    const base = ctx.installation.publicUrl;
    const links = {
      name: 'Mintworks',
      api: `${base}/v1`,
      docs: `${base}/docs`,
      openapi: `${base}/openapi.json`,
      console: `${base}/console`,
      health: `${base}/health`,
    };
    if (!wantsHtml(req.headers.accept)) return links;
    const rows: [string, string, string][] = [
      ['API reference', links.docs, links.docs],
      ['Developer console', links.console, links.console],
      ['OpenAPI document', links.openapi, links.openapi],
      ['Health', links.health, links.health],
      ['API base URL', links.api, links.api],
    ];
    return sendHtml(
      reply,
      page(
        'Mintworks',
        rows,
        'A self-hosted asset-minting service. The API answers under <code>/v1</code> (App key and token) and <code>/admin/v1</code> (operator token).',
      ),
    );
  });

  app.get('/health', { schema: { hide: true } }, async (_req, reply) => {
    const h = await health();
    return reply.code(h.ready ? 200 : 503).send(h);
  });
}
