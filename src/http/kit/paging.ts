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

const PAGE_OPEN = Buffer.from('{"success":true,"data":[');
const COMMA = Buffer.from(',');
const PAGE_CLOSE = Buffer.from(']}');

/**
 * The same for a page whose entries are JSON already, as UTF-8 (services/assets/reads.ts): the answer's
 * envelope is put around them, byte for byte what the serializer would have written of the objects.
 */
export function sendJsonPage(req: FastifyRequest, reply: FastifyReply, publicUrl: string, page: Page<Buffer>): FastifyReply {
  const items = sendPage(req, reply, publicUrl, page);
  const parts: Buffer[] = [PAGE_OPEN];
  for (let i = 0; i < items.length; i++) {
    if (i > 0) parts.push(COMMA);
    parts.push(items[i]);
  }
  parts.push(PAGE_CLOSE);
  return reply.type('application/json; charset=utf-8').send(Buffer.concat(parts));
}
