// The console's item pages (ERC-1155 collections): a collection's items, one item, a user's holdings.
import { z } from 'zod';
import { itemDetail, listCollectionItems, userItemHoldings } from '../../services/console/items.js';
import { str } from '../kit/schemas.js';
import { ok } from '../kit/route-kit.js';
import { appFinder, type ConsolePage } from './kit.js';

export const itemPages: ConsolePage = async (app, deps) => {
  const { ctx } = deps;
  const requireApp = appFinder(ctx);
  app.get('/apps/:uid/collections/:collection/items', { schema: { params: z.object({ uid: str(), collection: str() }) } }, async (req) =>
    ok(await listCollectionItems(ctx, await requireApp(req.params.uid), req.params.collection)),
  );
  app.get('/apps/:uid/items/:item', { schema: { params: z.object({ uid: str(), item: str() }) } }, async (req) =>
    ok(await itemDetail(ctx, await requireApp(req.params.uid), req.params.item)),
  );
  app.get('/apps/:uid/users/:user/items', { schema: { params: z.object({ uid: str(), user: str() }) } }, async (req) =>
    ok(await userItemHoldings(ctx, await requireApp(req.params.uid), req.params.user)),
  );
};
