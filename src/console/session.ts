// Console sessions: signing in with the operator token gives the browser a random session id in an
// HttpOnly, SameSite=Strict cookie (Secure when PUBLIC_URL is https) scoped to /console. The server
// keeps only a digest of the id with its expiry, in the `meta` table, so every API process of an
// installation accepts it and signing out ends it everywhere at once. A session also names the
// operator token it was opened with: changing OPERATOR_TOKEN ends every session.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../store/db.js';
import { ApiError } from '../util/errors.js';

export const SESSION_COOKIE = 'mw_console';
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
const KEY_PREFIX = 'console.session.';

const sha256 = (s: string) => createHash('sha256').update(s).digest();

export interface Session {
  expiresAt: number;
}

export class ConsoleSessions {
  private readonly tokenDigest: Buffer;
  private readonly tokenTag: string;

  constructor(
    private readonly db: Db,
    operatorToken: string | undefined,
    private readonly ttlMs = SESSION_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.tokenDigest = sha256(operatorToken ?? '');
    this.tokenTag = operatorToken ? sha256(`console-session:${operatorToken}`).toString('hex').slice(0, 16) : '';
  }

  /** True when `token` is the operator token (compared in constant time). */
  checkToken(token: string): boolean {
    return this.tokenTag !== '' && timingSafeEqual(sha256(token), this.tokenDigest);
  }

  async create(): Promise<{ id: string; expiresAt: number }> {
    await this.sweep();
    const id = randomBytes(32).toString('base64url');
    const expiresAt = this.now() + this.ttlMs;
    await this.db.insertInto('meta').values({ key: keyOf(id), value: `${expiresAt}:${this.tokenTag}` }).execute();
    return { id, expiresAt };
  }

  async verify(id: string | undefined): Promise<Session | null> {
    if (!id || !/^[A-Za-z0-9_-]{43}$/.test(id)) return null;
    const row = await this.db.selectFrom('meta').select('value').where('key', '=', keyOf(id)).executeTakeFirst();
    if (!row) return null;
    const [exp, tag] = row.value.split(':');
    const expiresAt = Number(exp);
    if (tag !== this.tokenTag || !(expiresAt > this.now())) return null;
    return { expiresAt };
  }

  async destroy(id: string | undefined): Promise<void> {
    if (id) await this.db.deleteFrom('meta').where('key', '=', keyOf(id)).execute();
  }

  /** Drops expired sessions and those of another operator token (a handful of rows: one per sign-in). */
  private async sweep(): Promise<void> {
    const rows = await this.db.selectFrom('meta').select(['key', 'value']).where('key', 'like', `${KEY_PREFIX}%`).execute();
    const stale = rows.filter((r) => {
      const [exp, tag] = r.value.split(':');
      return tag !== this.tokenTag || !(Number(exp) > this.now());
    });
    if (stale.length) await this.db.deleteFrom('meta').where('key', 'in', stale.map((r) => r.key)).execute();
  }
}

const keyOf = (id: string) => KEY_PREFIX + sha256(id).toString('hex');

export function readCookie(req: FastifyRequest, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

export function sessionCookie(id: string, maxAgeMs: number, secure: boolean): string {
  const attrs = [`${SESSION_COOKIE}=${id}`, 'Path=/console', `Max-Age=${Math.max(0, Math.round(maxAgeMs / 1000))}`, 'HttpOnly', 'SameSite=Strict'];
  if (secure) attrs.push('Secure');
  return attrs.join('; ');
}

export const clearedCookie = (secure: boolean) => sessionCookie('', 0, secure);

/**
 * Refuses requests another site could have made: a browser tells the site a request comes from
 * (Sec-Fetch-Site, Origin). Only this service's own origin, as PUBLIC_URL names it, is accepted: never
 * the Host header, which a page of another site reaching this service through a name that resolves
 * here (DNS rebinding) sets to its own name. A loopback PUBLIC_URL also accepts the other loopback
 * names of the same port (localhost, 127.0.0.1, [::1]): only a browser on this machine can use them.
 * Requests without those headers do not come from a page of another site.
 */
export function assertSameOrigin(req: FastifyRequest, publicUrl: string): void {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin') throw crossSite();
  const origin = req.headers.origin;
  if (origin !== undefined && !ownOrigins(publicUrl).has(origin)) throw crossSite();
}

const LOOPBACK = ['localhost', '127.0.0.1', '[::1]'];
const origins = new Map<string, Set<string>>();

/** The origins a console page of this service can have. */
function ownOrigins(publicUrl: string): Set<string> {
  let own = origins.get(publicUrl);
  if (own) return own;
  const u = new URL(publicUrl);
  own = new Set([u.origin]);
  if (LOOPBACK.includes(u.hostname)) for (const h of LOOPBACK) own.add(`${u.protocol}//${h}${u.port ? `:${u.port}` : ''}`);
  origins.set(publicUrl, own);
  return own;
}

const crossSite = () => ApiError.client(403, 'cross_site_request', 'Console requests are accepted from the console\'s own pages only.');

/** Failed sign-ins per client address (shared with every other check of the operator token). */
export { OperatorAttempts as SignInThrottle } from '../http/kit/operator-attempts.js';

export function setNoStore(reply: FastifyReply): void {
  reply.header('cache-control', 'no-store');
}
