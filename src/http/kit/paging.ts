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

const PAGE_OPEN = Buffer.from('{"success":true,"data":[');
const COMMA = Buffer.from(',');
const PAGE_CLOSE = Buffer.from(']}');

/**
 * A page's answer from its entries' JSON (UTF-8): the envelope put around them, byte for byte what the
 * serializer would have written of the objects.
 */
export function jsonPageAnswer(entries: Buffer[]): Buffer {
  const parts: Buffer[] = [PAGE_OPEN];
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) parts.push(COMMA);
    parts.push(entries[i]);
  }
  parts.push(PAGE_CLOSE);
  return Buffer.concat(parts);
}

/** The same for a page whose answer is made already (by jsonPageAnswer; services/assets/reads.ts). */
export function sendJsonPage(req: FastifyRequest, reply: FastifyReply, publicUrl: string, page: { json: Buffer; next: string | null }): FastifyReply {
  linkNext(req, reply, publicUrl, page.next);
  return reply.type('application/json; charset=utf-8').send(page.json);
}
