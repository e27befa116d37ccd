// Console sessions over HTTP: signing in with the operator token gives the browser a random session id in
// an HttpOnly, SameSite=Strict cookie (Secure when PUBLIC_URL is https) scoped to /console; the server
// side of a session is services/console/sessions.ts. Also the console's same-origin check.
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../util/errors.js';

export const SESSION_COOKIE = 'mw_console';

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

const crossSite = () => ApiError.of('cross_site_request');

/** Failed sign-ins per client address (shared with every other check of the operator token). */
export { OperatorAttempts as SignInThrottle } from '../kit/operator-attempts.js';
