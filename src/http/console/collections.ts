// The console's collections pages: the chains a collection can go to, the list, a new one, and one
// collection with a change of its royalty or contract document.
import { z } from 'zod';
import { createCollection } from '../../services/collections/collections.js';
import { listCollections } from '../../services/console/queries.js';
import type { ChainOption } from '../../services/console/types.js';
import { collectionStandard, str } from '../kit/schemas.js';
import { ok } from '../kit/route-kit.js';
import { requestActor } from '../kit/actor.js';
import { updateCollection } from '../../services/collections/info.js';
import { MAX_ROYALTY_BPS } from '../../domain/collection-options.js';
import { ApiError } from '../../util/errors.js';
import { appFinder, appParam, type ConsolePage } from './kit.js';

// Long: one table of routes, a short entry each.
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
          soulbound: z.boolean().default(false),
          ...optionFields,
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
              soulbound: b.soulbound,
              royalty_receiver: b.royalty_receiver || null,
              royalty_bps: b.royalty_bps ?? null,
              image_url: b.image_url || null,
              external_url: b.external_url || null,
            },
            requestActor(req),
          ),
        ),
      );
    },
  );

  // The collection's page: its options as recorded, and a change of the changeable ones (the contract follows).
  const collectionParams = z.object({ uid: str(), collection: str() });
  app.get('/apps/:uid/collections/:collection', { schema: { params: collectionParams } }, async (req) => {
    const uid = await requireApp(req.params.uid);
    const c = (await listCollections(ctx, uid)).find((x) => x.uid === req.params.collection);
    if (!c) throw ApiError.notFound('Collection');
    return ok(c);
  });
  app.patch(
    '/apps/:uid/collections/:collection',
    { schema: { params: collectionParams, body: z.object({ description: str().max(2000).nullish(), ...optionFields }).strict() } },
    async (req) => {
      const uid = await requireApp(req.params.uid);
      const b = req.body;
      // The form sends every field: an empty one clears it.
      await updateCollection(
        ctx,
        uid,
        req.params.collection,
        {
          description: b.description || null,
          royalty_receiver: b.royalty_receiver || null,
          royalty_bps: b.royalty_bps ?? null,
          image_url: b.image_url || null,
          external_url: b.external_url || null,
        },
        requestActor(req),
      );
      return ok(null);
    },
  );
};

/** The options the form edits; empty texts mean none (the domain checks the royalty further). */
const optionFields = {
  royalty_receiver: str().max(100).nullish(),
  royalty_bps: z.number().int().min(0).max(MAX_ROYALTY_BPS).nullish(),
  image_url: z.union([z.literal(''), str().url('Enter a URL (https://… or ipfs://…).').max(2000)]).nullish(),
  external_url: z.union([z.literal(''), str().url('Enter a URL (https://…).').max(2000)]).nullish(),
};
