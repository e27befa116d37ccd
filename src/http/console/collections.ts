// The console's collections page: the chains a collection can go to, the list, and a new one.
import { z } from 'zod';
import { createCollection } from '../../services/collections/collections.js';
import { listCollections } from '../../services/console/queries.js';
import type { ChainOption } from '../../services/console/types.js';
import { collectionStandard, str } from '../kit/schemas.js';
import { ok } from '../kit/route-kit.js';
import { requestActor } from '../kit/actor.js';
import { appFinder, appParam, type ConsolePage } from './kit.js';

export const collectionPages: ConsolePage = async (app, deps) => {
  const { ctx } = deps;
  const requireApp = appFinder(ctx);
  app.get('/chains', async () => ok(ctx.installation.chains.map((c): ChainOption => ({ chain_id: c.id, name: c.name }))));
  app.get('/apps/:uid/collections', { schema: { params: appParam } }, async (req) => ok(await listCollections(ctx, await requireApp(req.params.uid))));

  app.post(
    '/apps/:uid/collections',
    {
      schema: {
        params: appParam,
        body: z.object({
          name: str().trim().min(1, 'Enter a name.').max(100),
          symbol: str()
            .trim()
            .regex(/^[A-Za-z0-9]{1,16}$/, 'Symbol: 1-16 letters or digits.'),
          description: str().max(2000).nullish(),
          editable_assets: z.boolean().default(false),
          chain_id: z.number().int().positive().nullish(),
          standard: collectionStandard,
        }),
      },
    },
    async (req, reply) => {
      const b = req.body;
      const uid = await requireApp(req.params.uid);
      return reply.code(201).send(
        ok(
          await createCollection(
            ctx,
            uid,
            {
              name: b.name,
              symbol: b.symbol,
              editable: b.editable_assets,
              description: b.description || null,
              chain_id: b.chain_id,
              standard: b.standard,
            },
            requestActor(req),
          ),
        ),
      );
    },
  );
};
