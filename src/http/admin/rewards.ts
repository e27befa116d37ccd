// /admin/v1/apps/:uid/rewards: an App's rewards: create (deploys the contract), list, read, withdraw.
// Behind the operator token (the hook of the /admin/v1 scope, src/http/admin/index.ts); the console
// mounts the same routes behind its session.
import { requestActor } from '../kit/actor.js';
import { recordAudit } from '../../services/audit.js';
import { z } from 'zod';
import type { Ctx } from '../../services/context.js';
import { amountField, str } from '../kit/schemas.js';
import { ok, requireApp, type App } from '../kit/route-kit.js';
import { createReward, getRewardAdmin, listRewards, requestWithdraw } from '../../services/rewards/index.js';
import { created, rewardAdminObject, list } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';

const createRewardBody = z.object({
  name: str().trim().min(1).max(100),
  token_name: str().trim().min(1).max(100),
  token_symbol: str().min(1).max(16),
  supply: amountField,
  withdraw_receiver: str().nullish(),
  description: str().max(2000).nullish(),
  chain_id: z.number().int().positive().nullish(),
});

/** Management: rewards of an App: create (deploys the contract), list, read, withdraw. */
export async function adminRewardRoutes(app: App, ctx: Ctx): Promise<void> {
  const tags = { tags: ['admin'] };
  const appParam = z.object({ uid: str() });
  const rewardParam = z.object({ uid: str(), reward: str() });

  app.get('/apps/:uid/rewards', { schema: { ...tags, params: appParam } }, async (req) => {
    return ok(await listRewards(ctx, await requireApp(ctx, req.params.uid)));
  });

  app.post(
    '/apps/:uid/rewards',
    { schema: { ...tags, params: appParam, body: createRewardBody }, config: { exactNumbers: ['supply'] } },
    async (req, reply) => {
      const appUid = await requireApp(ctx, req.params.uid);
      const r = await createReward(ctx, appUid, req.body);
      await recordAudit(ctx.db, requestActor(req), {
        action: 'reward.created',
        app_uid: appUid,
        chain_id: req.body.chain_id ?? null,
        details: { reward: r.uid, supply: req.body.supply },
      });
      return reply.code(201).send(ok(r));
    },
  );

  app.get('/apps/:uid/rewards/:reward', { schema: { ...tags, params: rewardParam } }, async (req) => {
    return ok(await getRewardAdmin(ctx, await requireApp(ctx, req.params.uid), req.params.reward));
  });

  app.post('/apps/:uid/rewards/:reward/withdraw', { schema: { ...tags, params: rewardParam } }, async (req) => {
    const appUid = await requireApp(ctx, req.params.uid);
    const r = await requestWithdraw(ctx, appUid, req.params.reward);
    await recordAudit(ctx.db, requestActor(req), { action: 'reward.withdrawn', app_uid: appUid, details: { reward: req.params.reward } });
    return ok(r);
  });
}

/** What /openapi.json says of these routes' answers: joined to them as they are registered (a route without one fails to register). */
export const rewardsDocs = {
  'GET /apps/:uid/rewards': { operationId: 'adminListRewards', summary: "List an App's rewards", data: list(rewardAdminObject) },
  'POST /apps/:uid/rewards': { operationId: 'adminCreateReward', summary: 'Create a reward (ERC-20)', status: 201, data: created },
  'GET /apps/:uid/rewards/:reward': { operationId: 'adminGetReward', summary: 'Get a reward with its budget', data: rewardAdminObject },
  'POST /apps/:uid/rewards/:reward/withdraw': {
    operationId: 'adminWithdrawReward',
    summary: 'Withdraw what the reward still holds',
    description: 'To its withdraw receiver, once pending allocations and claims are done.',
    data: rewardAdminObject,
  },
} satisfies RouteDocs;
