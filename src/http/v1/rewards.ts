// /v1/reward: the public reward endpoints (docs/api.md, Rewards): balances, allocations, claims, a reward.
// Rewards are created and withdrawn through the management API (src/http/admin/rewards.ts).
//
// Fastify's router prefers static segments, so the literal routes /reward/balance, /reward/allocate
// and /reward/claim win over /reward/{uid} whatever the registration order.
import { sendPage } from '../kit/paging.js';
import { z } from 'zod';
import type { Ctx } from '../../services/context.js';
import { ApiError } from '../../util/errors.js';
import { parseAmount } from '../../domain/amounts.js';
import { amountField, pageQuery, requiredStr, str } from '../kit/schemas.js';
import { ok, uidOr404, type App } from '../kit/route-kit.js';
import {
  allocate,
  getAllocation,
  getBalance,
  getClaim,
  getReward,
  listAllocationsOfUser,
  listClaimsOfUser,
  requestClaim,
} from '../../services/rewards/index.js';
import { allocationObject, balanceObject, claimObject, created, rewardObject, list, paged } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';

const uidText = str({ error: 'This field is required.' })
  .trim()
  .min(1, 'This field may not be blank.')
  .max(32, 'Ensure this field has no more than 32 characters.');

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
      const r = await allocate(
        ctx,
        req.appUid,
        { reward_uid: b.reward_uid, to_user_uid: b.to_user_uid, amount: parseAmount(b.amount), nonce },
        req.idempotency,
      );
      return reply.code(201).send(ok(r));
    });
    app.get(`${base}/:uid`, { schema: { ...tags, params: uidParam } }, async (req) => {
      return ok(await getAllocation(ctx, req.appUid, uidOr404(req.params.uid, 'Allocation')));
    });
    app.get(base, { schema: { ...tags, querystring: userListQuery } }, async (req, reply) => {
      const { user_uid, ...page } = req.query;
      if (user_uid === undefined) throw ApiError.of('not_found');
      return ok(sendPage(req, reply, ctx.installation.publicUrl, await listAllocationsOfUser(ctx, req.appUid, user_uid, page)));
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
    if (user_uid === undefined) throw ApiError.of('not_found');
    return ok(sendPage(req, reply, ctx.installation.publicUrl, await listClaimsOfUser(ctx, req.appUid, user_uid, page)));
  });

  // A reward
  app.get('/reward/:uid', { schema: { ...tags, params: uidParam } }, async (req) => {
    return ok(await getReward(ctx, req.appUid, uidOr404(req.params.uid, 'Reward')));
  });
}

/** What /openapi.json says of these routes' answers: joined to them as they are registered (a route without one fails to register). */
export const rewardsDocs = {
  'GET /reward/balance': {
    operationId: 'getRewardBalance',
    summary: "A user's unclaimed reward balance",
    description: 'An unknown user has 0.',
    data: balanceObject,
  },
  'POST /reward/allocate': {
    operationId: 'allocateReward',
    summary: 'Allocate reward tokens to a user',
    description: '`amount` as a JSON number or numeric string (18 decimals at most); `nonce` unique per reward.',
    status: 201,
    data: created,
  },
  'GET /reward/allocate/:uid': { operationId: 'getAllocation', summary: 'Get an allocation', data: allocationObject },
  'GET /reward/allocate': {
    operationId: 'listAllocations',
    summary: "List a user's allocations",
    description: `Query \`user_uid\`.${paged}`,
    data: list(allocationObject),
  },
  'POST /reward/allocation': { operationId: 'createAllocation', summary: 'Allocate reward tokens (alias of /reward/allocate)', status: 201, data: created },
  'GET /reward/allocation/:uid': { operationId: 'getAllocationByAlias', summary: 'Get an allocation (alias)', data: allocationObject },
  'GET /reward/allocation': {
    operationId: 'listAllocationsByAlias',
    summary: "List a user's allocations (alias)",
    description: `Query \`user_uid\`.${paged}`,
    data: list(allocationObject),
  },
  'POST /reward/claim': {
    operationId: 'claimReward',
    summary: "Claim a user's whole balance to an address",
    description: "Paid on chain, signed by the user's key; concurrent claims never pay more than the balance.",
    status: 201,
    data: created,
  },
  'GET /reward/claim/:uid': { operationId: 'getClaim', summary: 'Get a claim', data: claimObject },
  'GET /reward/claim': { operationId: 'listClaims', summary: "List a user's claims", description: `Query \`user_uid\`.${paged}`, data: list(claimObject) },
  'GET /reward/:uid': { operationId: 'getReward', summary: 'Get a reward', data: rewardObject },
} satisfies RouteDocs;
