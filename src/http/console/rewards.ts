// The console's rewards pages: the management routes of rewards, and a reward's allocations and claims.
import { requestActor } from '../kit/actor.js';
import { recordAudit } from '../../services/audit.js';
import { z } from 'zod';
import { allocate, requestClaim } from '../../services/rewards/index.js';
import { listRewardAllocations, listRewardClaims } from '../../services/console/queries.js';
import { parseAmount } from '../../domain/amounts.js';
import { newEventId } from '../../util/ids.js';
import { amountField, str } from '../kit/schemas.js';
import { ok } from '../kit/route-kit.js';
import { adminRewardRoutes } from '../admin/rewards.js';
import { appFinder, page, type ConsolePage } from './kit.js';

// Long: one table of routes, a short entry each.
export const rewardPages: ConsolePage = async (app, deps) => {
  const { ctx } = deps;
  const requireApp = appFinder(ctx);
  await adminRewardRoutes(app, ctx); // GET/POST /apps/:uid/rewards, GET /apps/:uid/rewards/:reward, POST …/withdraw
  const rewardParam = z.object({ uid: str(), reward: str() });

  app.get('/apps/:uid/rewards/:reward/allocations', { schema: { params: rewardParam, querystring: z.object(page) } }, async (req) => {
    return ok(await listRewardAllocations(ctx, await requireApp(req.params.uid), req.params.reward, req.query));
  });

  app.post(
    '/apps/:uid/rewards/:reward/allocations',
    {
      schema: {
        params: rewardParam,
        body: z.object({ to_user_uid: str().trim().min(1, 'Enter a user uid.').max(32), amount: amountField, nonce: str().trim().max(255).optional() }),
      },
    },
    async (req, reply) => {
      const uid = await requireApp(req.params.uid);
      const b = req.body;
      const r = await allocate(ctx, uid, {
        reward_uid: req.params.reward,
        to_user_uid: b.to_user_uid,
        amount: parseAmount(b.amount),
        nonce: b.nonce || `console-${newEventId()}`,
      });
      await recordAudit(ctx.db, requestActor(req), {
        action: 'reward.allocated',
        app_uid: uid,
        user_uid: b.to_user_uid,
        details: { reward: req.params.reward, allocation: r.uid, amount: b.amount },
      });
      return reply.code(201).send(ok(r));
    },
  );

  app.get('/apps/:uid/rewards/:reward/claims', { schema: { params: rewardParam, querystring: z.object(page) } }, async (req) => {
    return ok(await listRewardClaims(ctx, await requireApp(req.params.uid), req.params.reward, req.query));
  });

  app.post(
    '/apps/:uid/rewards/:reward/claims',
    {
      schema: {
        params: rewardParam,
        body: z.object({ from_user_uid: str().trim().min(1, 'Enter a user uid.').max(32), to_address: str().trim().min(1, 'Enter an address.').max(64) }),
      },
    },
    async (req, reply) => {
      const uid = await requireApp(req.params.uid);
      const r = await requestClaim(ctx, uid, { reward_uid: req.params.reward, from_user_uid: req.body.from_user_uid, to_address: req.body.to_address });
      await recordAudit(ctx.db, requestActor(req), {
        action: 'reward.claimed',
        app_uid: uid,
        user_uid: req.body.from_user_uid,
        details: { reward: req.params.reward, claim: r.uid, to: req.body.to_address },
      });
      return reply.code(201).send(ok(r));
    },
  );
};
