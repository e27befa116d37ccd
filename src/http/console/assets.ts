// The console's assets page: a list by collection, status or search, and one asset in detail.
import { z } from 'zod';
import { ASSET_STATUSES, assetDetail, listAssets } from '../../services/console/assets.js';
import { str } from '../kit/schemas.js';
import { ok } from '../kit/route-kit.js';
import { appFinder, appParam, page, type ConsolePage } from './kit.js';

export const assetPages: ConsolePage = async (app, deps) => {
  const { ctx } = deps;
  const requireApp = appFinder(ctx);
  app.get(
    '/apps/:uid/assets',
    {
      schema: {
        params: appParam,
        querystring: z.object({ ...page, collection: str().max(32).optional(), status: z.enum(ASSET_STATUSES).optional(), q: str().max(255).optional() }),
      },
    },
    async (req) => {
      const q = req.query;
      return ok(
        await listAssets(ctx, await requireApp(req.params.uid), {
          cursor: q.cursor,
          limit: q.limit,
          collection: q.collection || undefined,
          status: q.status,
          search: q.q,
        }),
      );
    },
  );

  app.get('/apps/:uid/assets/:asset', { schema: { params: z.object({ uid: str(), asset: str() }) } }, async (req) => {
    return ok(await assetDetail(ctx, await requireApp(req.params.uid), req.params.asset));
  });
};
