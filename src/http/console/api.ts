// The console's JSON API under /console/api: for the browser app only (console/), behind a console
// session (or the operator token as a bearer token, for scripts). Answers use the API's envelope; the
// shapes are in ./types.ts. Requests another site could have made are refused before anything else.
//
//   POST   /session                       sign in {token}: sets the session cookie
//   DELETE /session                       sign out
//   GET    /session                       {signed_in, expires_at} (never refused)
//   GET    /status                        chain, relayers, jobs (as /health)
//   GET    /apps                          Apps with their API key; POST /apps {name, environment}
//   GET    /apps/:uid                     one App; /overview counts; /activity?range=24h|30d
//   GET    /apps/:uid/users               ?cursor&limit&q; /users/:user a user with everything of theirs
//   GET    /apps/:uid/assets              ?cursor&limit&collection&status&q; /assets/:asset detail
//   GET    /apps/:uid/collections         POST creates one (deploys its contract)
//   GET    /apps/:uid/rewards/:reward/allocations|claims   ?cursor&limit; POST allocates|claims
//   GET    /apps/:uid/webhook/settings    the webhook (or null) and the event types
//   GET    /apps/:uid/webhook/log         ?cursor&limit&status; POST /apps/:uid/webhook/test
//   GET    /apps/:uid/keys                the API key; POST /keys/rotate, POST /keys/token
//   GET    /ops/chains[/:id[/transactions]]   the chain pages; POST /ops/chains/:id/transactions/:tx/cancel, /resync
//   POST   /apps/:uid/users/:user/wallet-export (src/http/admin/custody.ts); GET /audit ?cursor&limit&action
// and the management routes of rewards and webhooks, at the same paths as under /admin/v1
// (src/http/admin/rewards.ts, src/http/admin/webhooks.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Ctx } from '../../services/context.js';
import type { Health } from '../root.js';
import { ApiError } from '../../util/errors.js';
import { isUid, newEventId } from '../../util/ids.js';
import { createApp, getApp } from '../../services/apps/registry.js';
import { createCollection } from '../../services/collections.js';
import { allocate, requestClaim } from '../../services/rewards/index.js';
import { getApiKey, rotateApiSecret, bearerToken } from '../../services/apps/api-keys.js';
import { parseAmount } from '../../domain/amounts.js';
import { amountField, str } from '../kit/schemas.js';
import { bearer, operatorAttempts } from '../kit/operator-attempts.js';
import { adminRewardRoutes } from '../admin/rewards.js';
import { adminWebhookRoutes } from '../admin/webhooks.js';
import { adminChainRoutes } from '../admin/chains.js';
import type { ChainHandle } from '../../services/chain-ops.js';
import { adminCustodyRoutes } from '../admin/custody.js';
import { ok, type App } from '../kit/route-kit.js';
import { KNOWN_EVENT_TYPES, getWebhook } from '../../webhooks/endpoints.js';
import { sendTestEvent } from '../../services/console/webhook-test.js';
import { SESSION_COOKIE, SignInThrottle, assertSameOrigin, clearedCookie, readCookie, sessionCookie } from './session.js';
import { ConsoleSessions } from '../../services/console/sessions.js';
import {
  ASSET_STATUSES,
  appActivity,
  appCounts,
  appSummary,
  assetDetail,
  deliveryLog,
  listAppSummaries,
  listAssets,
  listCollections,
  listRewardAllocations,
  listRewardClaims,
  listUsers,
  userDetail,
} from '../../services/console/queries.js';
import type { ChainOption, ChainStatus } from '../../services/console/types.js';
import { listAudit, recordAudit, type Actor } from '../../services/audit.js';

/** The console's actor in the audit log: a console session, told apart by client address. */
const consoleActor = (req: FastifyRequest): Actor => ({ kind: 'console', detail: req.ip });


export interface ConsoleApiDeps {
  ctx: Ctx;
  health: () => Promise<Health>;
  /** The chains served: the chain pages use the operator's chain routes (under /ops). */
  runtimes?: readonly ChainHandle[];
}

const appParam = z.object({ uid: str() });
const page = { cursor: str().max(500).optional(), limit: z.coerce.number().int().min(1).max(200).default(50) };

export async function consoleApi(app: App, deps: ConsoleApiDeps): Promise<void> {
  const { ctx } = deps;
  const sessions = new ConsoleSessions(ctx.db, ctx.config.operatorToken);
  const throttle = operatorAttempts(ctx.config);
  /** Requests that carry the operator token itself (checked once, in the first hook). */
  const byOperatorToken = new WeakSet<FastifyRequest>();
  const secure = ctx.config.publicUrl.startsWith('https:');

  // Console routes stay out of the OpenAPI document of the public API.
  app.addHook('onRoute', (route) => {
    route.schema = { ...(route.schema ?? {}), hide: true };
  });
  app.addHook('onRequest', async (req, reply) => {
    reply.header('cache-control', 'no-store');
    if (bearerOperator(req, sessions, throttle)) byOperatorToken.add(req);
    else assertSameOrigin(req, ctx.config.publicUrl);
  });

  app.post('/session', { schema: { body: z.object({ token: str().trim().min(1, 'Enter the operator token.').max(1024) }) } }, async (req, reply) => {
    throttle.check(req.ip);
    if (!sessions.checkToken(req.body.token)) {
      throttle.fail(req.ip);
      throw ApiError.client(401, 'invalid_token', 'That is not the operator token.', 'token');
    }
    throttle.succeed(req.ip);
    const s = await sessions.create();
    await recordAudit(ctx.db, consoleActor(req), { action: 'operator.signed_in', details: { via: 'console' } });
    reply.header('set-cookie', sessionCookie(s.id, s.expiresAt - Date.now(), secure));
    return ok({ expires_at: new Date(s.expiresAt).toISOString() });
  });

  // Whether this browser is signed in: answered without refusing, so that the app's first request
  // does not fail before the sign-in form is even shown.
  app.get('/session', async (req) => {
    const s = await sessions.verify(readCookie(req, SESSION_COOKIE));
    return ok({ signed_in: s !== null, expires_at: s ? new Date(s.expiresAt).toISOString() : null });
  });

  app.delete('/session', async (req, reply) => {
    await sessions.destroy(readCookie(req, SESSION_COOKIE));
    reply.header('set-cookie', clearedCookie(secure));
    return ok(null);
  });

  await app.register(async (authed: App) => {
    authed.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
      if (byOperatorToken.has(req)) return;
      const s = await sessions.verify(readCookie(req, SESSION_COOKIE));
      if (!s) {
        reply.header('set-cookie', clearedCookie(secure));
        throw ApiError.client(401, 'unauthorized', 'Sign in to the console (your session has ended).');
      }
    });
    await authedRoutes(authed, deps);
  });
}

/**
 * True when the request carries the operator token as a Bearer token (scripts use the console API so).
 * A wrong one counts as a failed attempt of its address, as a wrong sign-in does.
 */
function bearerOperator(req: FastifyRequest, sessions: ConsoleSessions, attempts: SignInThrottle): boolean {
  const token = bearer(req);
  if (token === null) return false;
  attempts.check(req.ip, 'operator-token attempts from this address');
  if (sessions.checkToken(token)) return true;
  attempts.fail(req.ip);
  return false;
}

async function authedRoutes(app: App, deps: ConsoleApiDeps): Promise<void> {
  const { ctx, health } = deps;
  const requireApp = async (uid: string) => {
    if (!isUid(uid) || !(await getApp(ctx, uid))) throw ApiError.notFound('App');
    return uid;
  };

  app.get('/status', async () => {
    const h = (await health()) as Health & Partial<ChainStatus>;
    const status: ChainStatus = {
      status: String(h.status ?? (h.ready ? 'ok' : 'not ready')),
      ready: h.ready,
      chain: h.chain ?? { chain_id: ctx.config.chainId, name: ctx.config.chainName, block: null, embedded: false },
      relayers: h.relayers ?? [],
      unconfirmed_transactions: h.unconfirmed_transactions ?? 0,
      jobs: h.jobs ?? {},
    };
    return ok(status);
  });

  // -------------------------------------------------------------------------------------- apps
  app.get('/apps', async () => ok(await listAppSummaries(ctx)));

  app.post('/apps', { schema: { body: z.object({ name: str().trim().min(1, 'Enter a name.').max(100), environment: z.enum(['development', 'production']).default('development') }) } }, async (req, reply) => {
    const created = await createApp(ctx, req.body.name, req.body.environment);
    return reply.code(201).send(ok(created));
  });

  app.get('/apps/:uid', { schema: { params: appParam } }, async (req) => ok(await appSummary(ctx, await requireApp(req.params.uid))));

  app.get('/apps/:uid/overview', { schema: { params: appParam } }, async (req) => {
    const uid = await requireApp(req.params.uid);
    return ok({ app: await appSummary(ctx, uid), counts: await appCounts(ctx, uid) });
  });

  app.get('/apps/:uid/activity', { schema: { params: appParam, querystring: z.object({ range: z.enum(['24h', '30d']).default('24h') }) } }, async (req) => {
    return ok(await appActivity(ctx, await requireApp(req.params.uid), req.query.range));
  });

  // ------------------------------------------------------------------------------------- users
  app.get('/apps/:uid/users', { schema: { params: appParam, querystring: z.object({ ...page, q: str().max(320).optional() }) } }, async (req) => {
    return ok(await listUsers(ctx, await requireApp(req.params.uid), { cursor: req.query.cursor, limit: req.query.limit, search: req.query.q }));
  });

  app.get('/apps/:uid/users/:user', { schema: { params: z.object({ uid: str(), user: str() }) } }, async (req) => {
    return ok(await userDetail(ctx, await requireApp(req.params.uid), req.params.user));
  });

  // ------------------------------------------------------------------------------------ assets
  app.get(
    '/apps/:uid/assets',
    { schema: { params: appParam, querystring: z.object({ ...page, collection: str().max(32).optional(), status: z.enum(ASSET_STATUSES).optional(), q: str().max(255).optional() }) } },
    async (req) => {
      const q = req.query;
      return ok(await listAssets(ctx, await requireApp(req.params.uid), { cursor: q.cursor, limit: q.limit, collection: q.collection || undefined, status: q.status, search: q.q }));
    },
  );

  app.get('/apps/:uid/assets/:asset', { schema: { params: z.object({ uid: str(), asset: str() }) } }, async (req) => {
    return ok(await assetDetail(ctx, await requireApp(req.params.uid), req.params.asset));
  });

  // ------------------------------------------------------------------------------- collections
  app.get('/chains', async () => ok(ctx.config.chains.map((c): ChainOption => ({ chain_id: c.id, name: c.name }))));
  app.get('/apps/:uid/collections', { schema: { params: appParam } }, async (req) => ok(await listCollections(ctx, await requireApp(req.params.uid))));

  app.post(
    '/apps/:uid/collections',
    {
      schema: {
        params: appParam,
        body: z.object({
          name: str().trim().min(1, 'Enter a name.').max(100),
          symbol: str().trim().regex(/^[A-Za-z0-9]{1,16}$/, 'Symbol: 1-16 letters or digits.'),
          description: str().max(2000).nullish(),
          editable_assets: z.boolean().default(false),
          chain_id: z.number().int().positive().nullish(),
        }),
      },
    },
    async (req, reply) => {
      const b = req.body;
      const uid = await requireApp(req.params.uid);
      return reply.code(201).send(ok(await createCollection(ctx, uid, { name: b.name, symbol: b.symbol, editable: b.editable_assets, description: b.description || null, chain_id: b.chain_id })));
    },
  );

  // ----------------------------------------------------------------------------------- rewards
  await adminRewardRoutes(app, ctx); // GET/POST /apps/:uid/rewards, GET /apps/:uid/rewards/:reward, POST …/withdraw
  const rewardParam = z.object({ uid: str(), reward: str() });

  app.get('/apps/:uid/rewards/:reward/allocations', { schema: { params: rewardParam, querystring: z.object(page) } }, async (req) => {
    return ok(await listRewardAllocations(ctx, await requireApp(req.params.uid), req.params.reward, req.query));
  });

  app.post(
    '/apps/:uid/rewards/:reward/allocations',
    { schema: { params: rewardParam, body: z.object({ to_user_uid: str().trim().min(1, 'Enter a user uid.').max(32), amount: amountField, nonce: str().trim().max(255).optional() }) } },
    async (req, reply) => {
      const uid = await requireApp(req.params.uid);
      const b = req.body;
      const r = await allocate(ctx, uid, { reward_uid: req.params.reward, to_user_uid: b.to_user_uid, amount: parseAmount(b.amount), nonce: b.nonce || `console-${newEventId()}` });
      return reply.code(201).send(ok(r));
    },
  );

  app.get('/apps/:uid/rewards/:reward/claims', { schema: { params: rewardParam, querystring: z.object(page) } }, async (req) => {
    return ok(await listRewardClaims(ctx, await requireApp(req.params.uid), req.params.reward, req.query));
  });

  app.post(
    '/apps/:uid/rewards/:reward/claims',
    { schema: { params: rewardParam, body: z.object({ from_user_uid: str().trim().min(1, 'Enter a user uid.').max(32), to_address: str().trim().min(1, 'Enter an address.').max(64) }) } },
    async (req, reply) => {
      const uid = await requireApp(req.params.uid);
      return reply.code(201).send(ok(await requestClaim(ctx, uid, { reward_uid: req.params.reward, from_user_uid: req.body.from_user_uid, to_address: req.body.to_address })));
    },
  );

  // ------------------------------------------------------------------------------------ chains
  // The chain pages: the operator's chain routes of /admin/v1 (src/http/admin/chains.ts), under /ops
  // (GET /chains here is the list of chains a collection can be deployed on).
  await app.register(async (ops: App) => adminChainRoutes(ops, ctx, deps.runtimes ?? []), { prefix: '/ops' });

  // ----------------------------------------------------------------------------------- webhook
  await adminWebhookRoutes(app, ctx); // PUT/GET /apps/:uid/webhook, events, attempts, redeliver
  await adminCustodyRoutes(app, ctx, { actorOf: consoleActor, audit: false }); // POST /apps/:uid/users/:user/wallet-export

  app.get('/audit', { schema: { querystring: z.object({ ...page, action: z.string().max(64).optional() }) } }, async (req) => {
    const p = await listAudit(ctx, { action: req.query.action || undefined }, { cursor: req.query.cursor, limit: req.query.limit });
    return ok({ items: p.items, next_cursor: p.next });
  });

  // The configuration (null when there is none) with the event types a filter may name.
  app.get('/apps/:uid/webhook/settings', { schema: { params: appParam } }, async (req) => {
    const uid = await requireApp(req.params.uid);
    return ok({ webhook: await getWebhook(ctx, uid), event_types: KNOWN_EVENT_TYPES });
  });

  app.get(
    '/apps/:uid/webhook/log',
    { schema: { params: appParam, querystring: z.object({ ...page, status: z.enum(['pending', 'delivered', 'expired', 'disabled']).optional(), event_id: str().max(64).optional() }) } },
    async (req) => {
      const q = req.query;
      return ok(await deliveryLog(ctx, await requireApp(req.params.uid), { cursor: q.cursor, limit: q.limit, status: q.status, eventId: q.event_id }));
    },
  );

  // A `webhook.test` event, sent at once whatever the event filter says.
  app.post('/apps/:uid/webhook/test', { schema: { params: appParam } }, async (req, reply) => {
    return reply.code(201).send(ok(await sendTestEvent(ctx, await requireApp(req.params.uid))));
  });

  // -------------------------------------------------------------------------------------- keys
  app.get('/apps/:uid/keys', { schema: { params: appParam } }, async (req) => ok(await getApiKey(ctx, await requireApp(req.params.uid))));

  app.post('/apps/:uid/keys/rotate', { schema: { params: appParam } }, async (req) => ok(await rotateApiSecret(ctx, await requireApp(req.params.uid), consoleActor(req))));

  app.post('/apps/:uid/keys/token', { schema: { params: appParam, body: z.object({ expires_in_seconds: z.number().int().min(60).max(30 * 86400).default(3600) }) } }, async (req) => {
    return ok(await bearerToken(ctx, await requireApp(req.params.uid), req.body.expires_in_seconds));
  });
}
