// The management API, under /admin/v1 (docs/api.md, Management API): not reachable with an App's key.
// The scope checks the operator token itself, before routing, so every route registered in it (whichever
// module declares it) and every unknown path there is behind the token by construction.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Ctx } from '../../services/context.js';
import { notFound } from '../kit/envelope.js';
import { operatorGuard } from './operator-token.js';
import { areaDocs, documentArea } from '../kit/openapi.js';
import { adminAppRoutes, appsDocs } from './apps.js';
import { adminWebhookRoutes, webhooksDocs } from './webhooks.js';
import { adminRewardRoutes, rewardsDocs } from './rewards.js';
import { adminChainRoutes, chainsDocs } from './chains.js';
import type { ChainHandle } from '../../services/chain-ops.js';
import { adminCustodyRoutes, custodyDocs } from './custody.js';

export const ADMIN_PREFIX = '/admin/v1';

/** Every /admin/v1 route's doc. */
export const ADMIN_DOCS = areaDocs(ADMIN_PREFIX, appsDocs, custodyDocs, webhooksDocs, rewardsDocs, chainsDocs);

export async function adminApi(app: FastifyInstance<any, any, any, any, any>, ctx: Ctx, chains: readonly ChainHandle[] = []): Promise<void> {
  await app.register(
    async (admin) => {
      documentArea(admin, ADMIN_DOCS);
      admin.addHook('onRequest', operatorGuard(ctx));
      // Unknown paths here run the operator check too: without the token they answer 401, not 404, so
      // the management API's surface is not probeable without it.
      admin.setNotFoundHandler(async () => {
        throw notFound();
      });
      const routes = admin.withTypeProvider<ZodTypeProvider>();
      await adminAppRoutes(routes, ctx);
      await adminWebhookRoutes(routes, ctx);
      await adminRewardRoutes(routes, ctx);
      await adminChainRoutes(routes, ctx, chains);
      await adminCustodyRoutes(routes, ctx);
    },
    { prefix: ADMIN_PREFIX },
  );
}
