// What runs before any /v1 route (and before "Not Found"): authentication and rate limits.
//
// - Requests per minute per API key (RATE_LIMIT): counted after authentication, decided in memory
//   (src/services/requests/rate-limits.ts), so an App over its limit costs nothing and never slows another.
// - Failed authentications per minute per client address (RATE_LIMIT_AUTH_FAILURES). Once an address is
//   over it, its requests are refused before their credentials are even looked at, unless they are
//   credentials this process has verified already (a working client behind the same address keeps
//   working). The address is the socket's peer; X-Forwarded-For counts only from TRUST_PROXY proxies.
// Every answer carries x-ratelimit-limit / -remaining / -reset (Unix seconds): the API key's budget,
// or for a request that did not authenticate, the address's budget of failures.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyResolver, ResolvedKey } from '../../services/apps/registry.js';
import type { Usage, WindowCounters } from '../../services/requests/rate-limits.js';
import { ApiError } from '../../util/errors.js';
import { knownGood, readCredentials, verifyCredentials, type Credentials } from './auth.js';

export interface Limits {
  /** Requests per minute per API key; 0 = none. */
  perKey: number;
  /** Failed authentications per minute per client address; 0 = none. */
  authFailures: number;
}

function budgetHeaders(reply: FastifyReply, limit: number, u: Usage): void {
  reply.header('x-ratelimit-limit', String(limit));
  reply.header('x-ratelimit-remaining', String(Math.max(0, limit - u.used)));
  reply.header('x-ratelimit-reset', String(Math.ceil(u.resetAt)));
}

function tooMany(reply: FastifyReply, u: Usage, message: string): ApiError {
  reply.header('retry-after', String(Math.max(1, Math.ceil(u.resetAt - Date.now() / 1000))));
  return ApiError.of('rate_limited', message);
}

export function apiGuard(resolver: ApiKeyResolver, counters: WindowCounters | null, limits: Limits) {
  const perKey = counters ? limits.perKey : 0;
  const authFailures = counters ? limits.authFailures : 0;
  /** A failed authentication counts against its address (and says the address's budget); rethrown. */
  const failed = (err: unknown, reply: FastifyReply, address: string): never => {
    if (authFailures > 0 && err instanceof ApiError && err.status === 401) {
      counters!.hit(address);
      budgetHeaders(reply, authFailures, counters!.usage(address));
    }
    throw err;
  };
  /** Authenticated: the key's rate limit, then the request is the App's. */
  const admit = (req: FastifyRequest, reply: FastifyReply, creds: Credentials, key: ResolvedKey): void => {
    if (perKey > 0) {
      const u = counters!.take(`key:${creds.apiKey}`, perKey);
      budgetHeaders(reply, perKey, u);
      if (!u.allowed) throw tooMany(reply, u, `Rate limit exceeded: ${perKey} requests per minute for this API key.`);
    }
    req.appUid = key.appUid;
    req.appEnvironment = key.environment;
  };
  // A promise only when the credentials need verifying: those this process verified already are
  // admitted at once (a promise and a turn of the microtasks less on nearly every request).
  return (req: FastifyRequest, reply: FastifyReply): void | Promise<void> => {
    const address = `ip:${req.ip}`;
    let creds: Credentials | null = null;
    try {
      let missing: unknown = null;
      try {
        creds = readCredentials(req);
      } catch (err) {
        missing = err;
      }
      if (authFailures > 0) {
        const u = counters!.usage(address);
        if (u.used >= authFailures && !(creds && knownGood(resolver, creds))) {
          budgetHeaders(reply, authFailures, u);
          throw tooMany(reply, u, 'Too many failed authentication attempts from this address: try again later.');
        }
      }
      if (!creds) throw missing;
      const known = knownGood(resolver, creds);
      if (known) return admit(req, reply, creds, known);
    } catch (err) {
      return failed(err, reply, address);
    }
    const verified = creds;
    return verifyCredentials(resolver, verified).then(
      (key) => admit(req, reply, verified, key),
      (err) => failed(err, reply, address),
    );
  };
}
