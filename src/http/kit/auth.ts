// Authentication (docs/api.md): X-API-KEY names the App; Authorization: Bearer <JWT> proves the caller holds its secret
// (HS256 only; `exp` enforced when present, tokens without it are valid as two SDKs never expire them).
import { jwtVerify, errors as joseErrors } from 'jose';
import type { FastifyRequest } from 'fastify';
import type { ApiKeyResolver, ResolvedKey } from '../../services/apps/registry.js';
import { ApiError } from '../../util/errors.js';
import type { AppEnvironment } from '../../domain/environment.js';
import { isStorableText } from '../../domain/text.js';

declare module 'fastify' {
  interface FastifyRequest {
    appUid: string;
    appEnvironment: AppEnvironment;
  }
}

const CLOCK_TOLERANCE_S = 30;

export interface Credentials {
  apiKey: string;
  token: string;
}

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

const unauthorized = (message: string) => ApiError.of('unauthorized', message);

/** The credentials a request carries; 401 when one is missing. */
export function readCredentials(req: FastifyRequest): Credentials {
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey !== 'string' || apiKey === '') throw unauthorized('Authentication credentials were not provided: send the X-API-KEY header.');
  if (!isStorableText(apiKey)) throw unauthorized('Invalid API key.'); // looked up in the database
  const auth = req.headers.authorization;
  const m = typeof auth === 'string' ? /^Bearer\s+(\S+)$/i.exec(auth) : null;
  if (!m) throw unauthorized('Authentication credentials were not provided: send Authorization: Bearer <token>.');
  return { apiKey, token: m[1] };
}

/** The App of these exact credentials when they were verified already (cached): no database, no signature check, no await. */
export function knownGood(resolver: ApiKeyResolver, c: Credentials): ResolvedKey | null {
  const app = resolver.cached(c.apiKey);
  return app !== null && alreadyVerified(app.verified, c.token) ? app : null;
}

/** The App the credentials belong to; 401 when they are not valid. */
export async function verifyCredentials(resolver: ApiKeyResolver, c: Credentials): Promise<ResolvedKey> {
  const app = await resolver.resolve(c.apiKey);
  if (!app) throw unauthorized('Invalid API key.');
  if (alreadyVerified(app.verified, c.token)) return app;
  let exp: number | null;
  try {
    const { payload } = await jwtVerify(c.token, app.key, { algorithms: ['HS256'], clockTolerance: CLOCK_TOLERANCE_S });
    if (payload.api_key !== undefined && payload.api_key !== c.apiKey) throw unauthorized('Access token was issued for another API key.');
    exp = typeof payload.exp === 'number' ? payload.exp : null;
  } catch (err) {
    if (err instanceof ApiError) throw err;
    if (err instanceof joseErrors.JWTExpired) throw unauthorized('Access token has expired.');
    throw unauthorized('Invalid access token.');
  }
  // SDKs send the same token for many requests: its signature and claims are checked once.
  if (app.verified.size >= 1000) app.verified.clear();
  app.verified.set(c.token, exp);
  return app;
}
