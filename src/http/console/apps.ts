// The console's Apps list and an App's overview, and the service's status (as /health).
import { z } from 'zod';
import type { Health } from '../root.js';
import { createApp } from '../../services/apps/registry.js';
import { appActivity, appCounts, appSummary, listAppSummaries } from '../../services/console/queries.js';
import type { ChainStatus } from '../../services/console/types.js';
import { str } from '../kit/schemas.js';
import { ok } from '../kit/route-kit.js';
import { requestActor } from '../kit/actor.js';
import { appFinder, appParam, type ConsolePage } from './kit.js';
import { defaultChain } from '../../config/config.js';

export const appPages: ConsolePage = async (app, deps) => {
  const { ctx, health } = deps;
  const requireApp = appFinder(ctx);
  app.get('/status', async () => {
    const h = (await health()) as Health & Partial<ChainStatus>;
    const status: ChainStatus = {
      status: String(h.status ?? (h.ready ? 'ok' : 'not ready')),
      ready: h.ready,
      chain: h.chain ?? { chain_id: defaultChain(ctx).id, name: defaultChain(ctx).name, block: null, embedded: false },
      relayers: h.relayers ?? [],
      unconfirmed_transactions: h.unconfirmed_transactions ?? 0,
      jobs: h.jobs ?? {},
    };
    return ok(status);
  });

  app.get('/apps', async () => ok(await listAppSummaries(ctx)));

  app.post(
    '/apps',
    {
      schema: {
        body: z.object({ name: str().trim().min(1, 'Enter a name.').max(100), environment: z.enum(['development', 'production']).default('development') }),
      },
    },
    async (req, reply) => {
      const created = await createApp(ctx, req.body.name, req.body.environment, requestActor(req));
      return reply.code(201).send(ok(created));
    },
  );

  app.get('/apps/:uid', { schema: { params: appParam } }, async (req) => ok(await appSummary(ctx, await requireApp(req.params.uid))));

  app.get('/apps/:uid/overview', { schema: { params: appParam } }, async (req) => {
    const uid = await requireApp(req.params.uid);
    return ok({ app: await appSummary(ctx, uid), counts: await appCounts(ctx, uid) });
  });

  app.get('/apps/:uid/activity', { schema: { params: appParam, querystring: z.object({ range: z.enum(['24h', '30d']).default('24h') }) } }, async (req) => {
    return ok(await appActivity(ctx, await requireApp(req.params.uid), req.query.range));
  });
};
