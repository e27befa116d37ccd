// /v1/collection: read a collection (they are created through the management API).
import type { Ctx } from '../../services/context.js';
import * as s from '../kit/schemas.js';
import { ok, uidOr404, type App } from '../kit/route-kit.js';
import { getCollection } from '../../services/collections/collections.js';
import { collectionObject } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';

export async function collectionRoutes(app: App, ctx: Ctx): Promise<void> {
  const tags = { tags: ['collections'] };

  app.get('/collection/:uid', { schema: { ...tags, params: s.uidParam } }, async (req) => {
    return ok(await getCollection(ctx, req.appUid, uidOr404(req.params.uid, 'Collection')));
  });
}

/** What /openapi.json says of these routes' answers: joined to them as they are registered (a route without one fails to register). */
export const collectionsDocs = {
  'GET /collection/:uid': { operationId: 'getCollection', summary: 'Get a collection', data: collectionObject },
} satisfies RouteDocs;
