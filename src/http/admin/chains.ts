// /admin/v1/chains: the operator's view of each chain and its tools (docs/chains-operations.md):
//   GET  /chains                                   every chain: head, base fee and ceiling, providers, relayers
//   GET  /chains/:chain_id                         one chain
//   GET  /chains/:chain_id/transactions?stuck=&limit=   transactions not confirmed yet, oldest first
//   POST /chains/:chain_id/transactions/:id/cancel a 0-value self-transfer at its nonce takes its place
//   POST /chains/:chain_id/resync                  relayer nonces in line with the chain; dropped transactions sent again
//   POST /chains/:chain_id/verify {app_uid?, fix?} every record against the chain; fix: set to what the chain shows
// Behind the operator token (the hook of the /admin/v1 scope, src/http/admin/index.ts); the console
// mounts the same routes behind its session.
import { z } from 'zod';
import type { Ctx } from '../../services/context.js';
import { ok, requireApp, type App } from '../kit/route-kit.js';
import { requestActor } from '../kit/actor.js';
import { ApiError } from '../../util/errors.js';
import type { FastifyRequest } from 'fastify';
import { cancelChainTx, chainOfTx, chainOverview, listChainTxs, requireChain, resyncChain, type ChainHandle } from '../../services/chain-ops.js';
import { verifyChain } from '../../services/verify/verify.js';
import type { Actor } from '../../services/audit.js';
import { str } from '../kit/schemas.js';
import { operatorActor } from './custody.js';
import { cancelObject, chainOverviewObject, chainTxObject, resyncObject, verifyObject, list } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';

const chainId = z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const chainParam = z.object({ chain_id: chainId });
const txParam = z.object({ chain_id: chainId, id: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER) });
const txQuery = z.object({
  stuck: z.enum(['true', 'false']).optional().describe('true: only transactions unconfirmed for longer than CHAIN_STUCK_SECONDS'),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});

const verifyBody = z.strictObject({
  app_uid: str().optional().describe("only this App's records"),
  fix: z.boolean().optional().describe('set each fixable record to what the chain shows'),
});

/** `actorOf`: who fixes, in the audit log (the console passes its session's). */
export async function adminChainRoutes(
  app: App,
  ctx: Ctx,
  chains: readonly ChainHandle[],
  opts: { actorOf?: (req: FastifyRequest) => Actor } = {},
): Promise<void> {
  const actorOf = opts.actorOf ?? operatorActor;
  const tags = { tags: ['admin', 'chains'] };

  app.get('/chains', { schema: tags }, async () => ok(await Promise.all(chains.map((h) => chainOverview(ctx, h)))));

  app.get('/chains/:chain_id', { schema: { ...tags, params: chainParam } }, async (req) =>
    ok(await chainOverview(ctx, requireChain(chains, req.params.chain_id))),
  );

  app.get('/chains/:chain_id/transactions', { schema: { ...tags, params: chainParam, querystring: txQuery } }, async (req) => {
    requireChain(chains, req.params.chain_id);
    return ok(await listChainTxs(ctx, { chainId: req.params.chain_id, stuck: req.query.stuck === 'true', limit: req.query.limit }));
  });

  app.post('/chains/:chain_id/transactions/:id/cancel', { schema: { ...tags, params: txParam } }, async (req) => {
    requireChain(chains, req.params.chain_id);
    if ((await chainOfTx(ctx, req.params.id)) !== req.params.chain_id) throw ApiError.notFound('Transaction');
    return ok(await cancelChainTx(ctx, chains, req.params.id, requestActor(req)));
  });

  app.post('/chains/:chain_id/resync', { schema: { ...tags, params: chainParam } }, async (req) =>
    ok(await resyncChain(ctx, requireChain(chains, req.params.chain_id), requestActor(req))),
  );

  app.post('/chains/:chain_id/verify', { schema: { ...tags, params: chainParam, body: verifyBody.optional() } }, async (req) => {
    const h = requireChain(chains, req.params.chain_id);
    const body = req.body ?? {};
    if (body.app_uid !== undefined) await requireApp(ctx, body.app_uid);
    return ok(await verifyChain(ctx, h, { appUid: body.app_uid, fix: body.fix ? { actor: actorOf(req) } : undefined }));
  });
}

/** What /openapi.json says of these routes' answers: joined to them as they are registered (a route without one fails to register). */
export const chainsDocs = {
  'GET /chains': {
    operationId: 'adminListChains',
    summary: 'Every chain: head, base fee and ceiling, providers, relayers',
    data: list(chainOverviewObject),
  },
  'GET /chains/:chain_id': {
    operationId: 'adminGetChain',
    summary: 'One chain: head, base fee and ceiling, providers, relayers',
    data: chainOverviewObject,
  },
  'GET /chains/:chain_id/transactions': {
    operationId: 'adminListChainTransactions',
    summary: 'Transactions not confirmed yet, oldest first',
    description: '`stuck=true`: only those unconfirmed for longer than CHAIN_STUCK_SECONDS.',
    data: list(chainTxObject),
  },
  'POST /chains/:chain_id/transactions/:id/cancel': {
    operationId: 'adminCancelChainTransaction',
    summary: 'Cancel a transaction that waits or is stuck',
    description:
      'A 0-value transfer from its account to itself at the same nonce, with higher fees, takes its place. If it is mined, the job fails as "cancelled by the operator"; if the original is mined first, the job is done. 409 for a settled transaction or a deployment.',
    data: cancelObject,
    errors: [409],
  },
  'POST /chains/:chain_id/resync': {
    operationId: 'adminResyncChain',
    summary: "Resync the relayers' nonces with the chain",
    description: "Next nonces raised to the chain's (never lowered); recorded transactions no node knows any more are sent again, byte for byte.",
    data: resyncObject,
  },
  'POST /chains/:chain_id/verify': {
    operationId: 'adminVerifyChain',
    summary: 'Verify every record of the chain against the chain',
    description:
      'Contracts (code, owner, operators, forwarder), each asset (owner, token URI, burned), transfers, burns, allocations, claims and reward balances, each divergence with both sides. `fix: true` sets each fixable record to what the chain shows (audited as `chain.divergence_fixed`, with the webhook events that were missed). `app_uid`: one App only.',
    data: verifyObject,
  },
} satisfies RouteDocs;
