// Rewards over HTTP: the public endpoints (docs/api.md, Rewards; under /v1, behind the App's API key) and
// the management routes (under /admin/v1, behind the operator token).
//
// Fastify's router prefers static segments, so the literal routes /reward/balance, /reward/allocate
// and /reward/claim win over /reward/{uid} whatever the registration order.
import { sendPage } from './paging.js';
import { z } from 'zod';
import type { Ctx } from '../services/context.js';
import { ApiError } from '../util/errors.js';
import { AmountError, parseAmount } from '../domain/amounts.js';
import { pageQuery, requiredStr, str } from './schemas.js';
import { ok, requireApp, uidOr404, type App } from './route-kit.js';
import {
  allocate,
  createReward,
  getAllocation,
  getBalance,
  getClaim,
  getReward,
  getRewardAdmin,
  listAllocationsOfUser,
  listClaimsOfUser,
  listRewards,
  requestClaim,
  requestWithdraw,
} from '../services/rewards/index.js';

const uidText = str({ error: 'This field is required.' }).trim().min(1, 'This field may not be blank.').max(32, 'Ensure this field has no more than 32 characters.');

/**
 * An amount: JSON number or numeric string, checked with the exact decimal rules of
 * domain/amounts.ts (the route parses it again into base units; the schema only validates, so the
 * OpenAPI document stays a plain number|string).
 */
export const amountField = z
  .union([z.number(), str()], { error: (iss) => (iss.input === undefined ? 'This field is required.' : 'Must be a number or a numeric string.') })
  .superRefine((v, c) => {
    try {
      parseAmount(v);
    } catch (err) {
      if (!(err instanceof AmountError)) throw err;
      c.addIssue({ code: 'custom', message: err.message });
    }
  })
  .describe('A decimal amount (18 decimals at most) as a JSON number or a numeric string, e.g. 1.5 or "1.5".');

const allocateBody = z.object({
  reward_uid: uidText,
  to_user_uid: uidText,
  amount: amountField,
  nonce: z
    .union([str().trim().min(1).max(255), z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)], {
      error: (iss) => (iss.input === undefined ? 'This field is required.' : 'Must be a non-empty string (255 characters at most) or a non-negative integer.'),
    })
    .describe('Unique per reward: a repeated nonce is refused and nothing is allocated.'),
});

const claimBody = z.object({
  reward_uid: uidText,
  from_user_uid: uidText,
  to_address: str({ error: 'This field is required.' }).describe('Any address: receives the whole unclaimed balance.'),
});

const balanceQuery = z.object({
  reward_uid: requiredStr(),
  user_uid: requiredStr(),
});

const userListQuery = z.object({ user_uid: str().optional(), ...pageQuery });
const uidParam = z.object({ uid: str() });

export async function rewardRoutes(app: App, ctx: Ctx): Promise<void> {
  const tags = { tags: ['rewards'] };

  // Balance (404 for an unknown reward; an unknown user has amount 0).
  app.get('/reward/balance', { schema: { ...tags, querystring: balanceQuery } }, async (req) => {
    const { reward_uid, user_uid } = req.query;
    return ok(await getBalance(ctx, req.appUid, uidOr404(reward_uid, 'Reward'), user_uid));
  });

  // Allocations, also under the alias /reward/allocation.
  for (const base of ['/reward/allocate', '/reward/allocation']) {
    app.post(base, { schema: { ...tags, body: allocateBody }, config: { exactNumbers: ['amount'] } }, async (req, reply) => {
      const b = req.body;
      const nonce = typeof b.nonce === 'string' ? b.nonce.trim() : b.nonce;
      const r = await allocate(ctx, req.appUid, { reward_uid: b.reward_uid, to_user_uid: b.to_user_uid, amount: parseAmount(b.amount), nonce }, req.idempotency);
      return reply.code(201).send(ok(r));
    });
    app.get(`${base}/:uid`, { schema: { ...tags, params: uidParam } }, async (req) => {
      return ok(await getAllocation(ctx, req.appUid, uidOr404(req.params.uid, 'Allocation')));
    });
    app.get(base, { schema: { ...tags, querystring: userListQuery } }, async (req, reply) => {
      const { user_uid, ...page } = req.query;
      if (user_uid === undefined) throw ApiError.client(404, 'not_found', 'Not Found');
      return ok(sendPage(req, reply, ctx.config.publicUrl, await listAllocationsOfUser(ctx, req.appUid, user_uid, page)));
    });
  }

  // Claims
  app.post('/reward/claim', { schema: { ...tags, body: claimBody } }, async (req, reply) => {
    return reply.code(201).send(ok(await requestClaim(ctx, req.appUid, req.body, req.idempotency)));
  });
  app.get('/reward/claim/:uid', { schema: { ...tags, params: uidParam } }, async (req) => {
    return ok(await getClaim(ctx, req.appUid, uidOr404(req.params.uid, 'Claim')));
  });
  app.get('/reward/claim', { schema: { ...tags, querystring: userListQuery } }, async (req, reply) => {
    const { user_uid, ...page } = req.query;
    if (user_uid === undefined) throw ApiError.client(404, 'not_found', 'Not Found');
    return ok(sendPage(req, reply, ctx.config.publicUrl, await listClaimsOfUser(ctx, req.appUid, user_uid, page)));
  });

  // A reward
  app.get('/reward/:uid', { schema: { ...tags, params: uidParam } }, async (req) => {
    return ok(await getReward(ctx, req.appUid, uidOr404(req.params.uid, 'Reward')));
  });
}

// ------------------------------------------------------------------------------------- management

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

  app.post('/apps/:uid/rewards', { schema: { ...tags, params: appParam, body: createRewardBody }, config: { exactNumbers: ['supply'] } }, async (req, reply) => {
    return reply.code(201).send(ok(await createReward(ctx, await requireApp(ctx, req.params.uid), req.body)));
  });

  app.get('/apps/:uid/rewards/:reward', { schema: { ...tags, params: rewardParam } }, async (req) => {
    return ok(await getRewardAdmin(ctx, await requireApp(ctx, req.params.uid), req.params.reward));
  });

  app.post('/apps/:uid/rewards/:reward/withdraw', { schema: { ...tags, params: rewardParam } }, async (req) => {
    return ok(await requestWithdraw(ctx, await requireApp(ctx, req.params.uid), req.params.reward));
  });
}
