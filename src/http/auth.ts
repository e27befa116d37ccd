// API.md §1: X-API-KEY names the App; Authorization: Bearer <JWT> proves the caller holds its secret
// (HS256 only; `exp` enforced when present, tokens without it are valid as two SDKs never expire them).
import { jwtVerify, errors as joseErrors } from 'jose';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyResolver } from '../services/apps.js';
import { ApiError } from '../util/errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    appUid: string;
    appEnvironment: 'development' | 'production';
  }
}

const CLOCK_TOLERANCE_S = 30;

/** A token verified before with the same key entry, and not expired since (`exp` re-checked every time). */
function alreadyVerified(verified: Map<string, number | null>, token: string): boolean {
  const exp = verified.get(token);
  if (exp === undefined) return false;
  if (exp !== null && exp + CLOCK_TOLERANCE_S < Date.now() / 1000) {
    verified.delete(token); // verified again below, which answers "expired"
    return false;
  }
  return true;
}

const unauthorized = (message: string) => ApiError.client(401, 'unauthorized', message);

export function authenticate(resolver: ApiKeyResolver) {
  return async (req: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const apiKey = req.headers['x-api-key'];
    if (typeof apiKey !== 'string' || apiKey === '') throw unauthorized('Authentication credentials were not provided: send the X-API-KEY header.');
    const auth = req.headers.authorization;
    const m = typeof auth === 'string' ? /^Bearer\s+(\S+)$/i.exec(auth) : null;
    if (!m) throw unauthorized('Authentication credentials were not provided: send Authorization: Bearer <token>.');
    const app = await resolver.resolve(apiKey);
    if (!app) throw unauthorized('Invalid API key.');
    const token = m[1];
    if (!alreadyVerified(app.verified, token)) {
      let exp: number | null;
      try {
        const { payload } = await jwtVerify(token, app.key, { algorithms: ['HS256'], clockTolerance: CLOCK_TOLERANCE_S });
        if (payload.api_key !== undefined && payload.api_key !== apiKey) throw unauthorized('Access token was issued for another API key.');
        exp = typeof payload.exp === 'number' ? payload.exp : null;
      } catch (err) {
        if (err instanceof ApiError) throw err;
        if (err instanceof joseErrors.JWTExpired) throw unauthorized('Access token has expired.');
        throw unauthorized('Invalid access token.');
      }
      // SDKs send the same token for many requests: its signature and claims are checked once.
      if (app.verified.size >= 1000) app.verified.clear();
      app.verified.set(token, exp);
    }
    req.appUid = app.appUid;
    req.appEnvironment = app.environment;
  };
}
