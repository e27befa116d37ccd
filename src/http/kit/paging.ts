// Paged lists over HTTP: `limit` and `cursor` query parameters, the page's entries as the plain array
// the SDKs expect, and `Link: <…>; rel="next"` when another page follows (RFC 8288).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Page } from '../../services/requests/pages.js';

/** Sets the Link header of the next page (an absolute URL under `publicUrl`) and returns the entries. */
export function sendPage<T>(req: FastifyRequest, reply: FastifyReply, publicUrl: string, page: Page<T>): T[] {
  if (page.next) {
    const u = new URL(req.url, 'http://placeholder');
    u.searchParams.set('cursor', page.next);
    reply.header('link', `<${publicUrl}${u.pathname}${u.search}>; rel="next"`);
  }
  return page.items;
}
