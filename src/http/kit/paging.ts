// Paged lists over HTTP: `limit` and `cursor` query parameters, the page's entries as the plain array
// the SDKs expect, and `Link: <…>; rel="next"` when another page follows (RFC 8288).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Page } from '../../services/requests/pages.js';

/** Sets the Link header of the next page (an absolute URL under `publicUrl`) and returns the entries. */
export function sendPage<T>(req: FastifyRequest, reply: FastifyReply, publicUrl: string, page: Page<T>): T[] {
  linkNext(req, reply, publicUrl, page.next);
  return page.items;
}

function linkNext(req: FastifyRequest, reply: FastifyReply, publicUrl: string, next: string | null): void {
  if (!next) return;
  const u = new URL(req.url, 'http://placeholder');
  u.searchParams.set('cursor', next);
  reply.header('link', `<${publicUrl}${u.pathname}${u.search}>; rel="next"`);
}

/**
 * A page's answer from its entries' JSON: the envelope put around them, byte for byte what the
 * serializer would have written of the objects, as UTF-8 bytes (kept whole and written again as they are).
 */
export function jsonPageAnswer(entries: string[]): Buffer {
  return Buffer.from(`{"success":true,"data":[${entries.join(',')}]}`);
}

/** The same for a page whose answer is made already (by jsonPageAnswer; services/assets/reads.ts). */
export function sendJsonPage(req: FastifyRequest, reply: FastifyReply, publicUrl: string, page: { json: Buffer; next: string | null }): FastifyReply {
  linkNext(req, reply, publicUrl, page.next);
  return reply.type('application/json; charset=utf-8').send(page.json);
}
