// The console's JSON API under /console/api: for the browser app only (console/), behind a console
// session (or the operator token as a bearer token, for scripts). Answers use the API's envelope; the
// shapes are in src/services/console/types.ts; each page's routes are a module of this folder. Requests another site could have made are refused before anything else.
//
//   POST   /session                       sign in {token}: sets the session cookie
//   DELETE /session                       sign out
//   GET    /session                       {signed_in, expires_at} (never refused)
//   GET    /status                        chain, relayers, jobs (as /health)
//   GET    /apps                          Apps with their API key; POST /apps {name, environment}
//   GET    /apps/:uid                     one App; /overview counts; /activity?range=24h|30d
//   GET    /apps/:uid/users               ?cursor&limit&q; /users/:user a user with everything of theirs
//   GET    /apps/:uid/assets              ?cursor&limit&collection&status&q; /assets/:asset detail
//   GET    /apps/:uid/collections         POST creates one (deploys its contract); /collections/:collection one, PATCH changes it
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
import { ApiError } from '../../util/errors.js';
import { str } from '../kit/schemas.js';
import { bearer, operatorAttempts } from '../kit/operator-attempts.js';
import { ok, type App } from '../kit/route-kit.js';
import { recordAudit } from '../../services/audit.js';
import { ConsoleSessions } from '../../services/console/sessions.js';
import { SESSION_COOKIE, type SignInThrottle, assertSameOrigin, clearedCookie, readCookie, sessionCookie } from './session.js';
import { consoleActor, type ConsoleApiDeps, type ConsolePage } from './kit.js';
import { appPages } from './apps.js';
import { userPages } from './users.js';
import { assetPages } from './assets.js';
import { collectionPages } from './collections.js';
import { rewardPages } from './rewards.js';
import { chainPages } from './chains.js';
import { webhookPages } from './webhook.js';
import { custodyPages } from './custody.js';
import { keyPages } from './keys.js';
import { itemPages } from './items.js';

export type { ConsoleApiDeps } from './kit.js';

export async function consoleApi(app: App, deps: ConsoleApiDeps): Promise<void> {
  const { ctx } = deps;
  const sessions = new ConsoleSessions(ctx.db, ctx.installation.operatorToken);
  const throttle = operatorAttempts(ctx);
  /** Requests that carry the operator token itself (checked once, in the first hook). */
  const byOperatorToken = new WeakSet<FastifyRequest>();
  const secure = ctx.installation.publicUrl.startsWith('https:');

  // Console routes stay out of the OpenAPI document of the public API.
  app.addHook('onRoute', (route) => {
    route.schema = { ...(route.schema ?? {}), hide: true };
  });
  app.addHook('onRequest', async (req, reply) => {
    reply.header('cache-control', 'no-store');
    if (await bearerOperator(req, reply, sessions, throttle)) byOperatorToken.add(req);
    else assertSameOrigin(req, ctx.installation.publicUrl);
  });

  app.post('/session', { schema: { body: z.object({ token: str().trim().min(1, 'Enter the operator token.').max(1024) }) } }, async (req, reply) => {
    await throttle.check(req, reply, 'sign-ins');
    if (!sessions.checkToken(req.body.token)) {
      await throttle.fail(req);
      throw ApiError.of('invalid_token', 'That is not the operator token.', 'token');
    }
    await throttle.succeed(req);
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
    const cookie = readCookie(req, SESSION_COOKIE);
    if (await sessions.verify(cookie)) await recordAudit(ctx.db, consoleActor(req), { action: 'operator.signed_out', details: { via: 'console' } });
    await sessions.destroy(cookie);
    reply.header('set-cookie', clearedCookie(secure));
    return ok(null);
  });

  await app.register(async (authed: App) => {
    authed.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
      if (byOperatorToken.has(req)) return;
      const s = await sessions.verify(readCookie(req, SESSION_COOKIE));
      if (!s) {
        reply.header('set-cookie', clearedCookie(secure));
        throw ApiError.of('unauthorized', 'Sign in to the console (your session has ended).');
      }
    });
    await authedRoutes(authed, deps);
  });
}

/**
 * True when the request carries the operator token as a Bearer token (scripts use the console API so).
 * A wrong one counts as a failed attempt of its address, as a wrong sign-in does.
 */
async function bearerOperator(req: FastifyRequest, reply: FastifyReply, sessions: ConsoleSessions, attempts: SignInThrottle): Promise<boolean> {
  const token = bearer(req);
  if (token === null) return false;
  await attempts.check(req, reply);
  if (sessions.checkToken(token)) return true;
  await attempts.fail(req);
  return false;
}

/** Every page's routes, behind the session. */
const PAGES: ConsolePage[] = [appPages, userPages, assetPages, collectionPages, rewardPages, chainPages, webhookPages, custodyPages, keyPages, itemPages];

async function authedRoutes(app: App, deps: ConsoleApiDeps): Promise<void> {
  for (const routes of PAGES) await routes(app, deps);
}
