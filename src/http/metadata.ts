// Public reads of what tokens point at, outside the API (no auth: marketplaces and wallets fetch them):
//  GET /metadata/<collection>/<token>  development Apps' token metadata (tokenURI = baseURI + token id)
//  GET /files/<sha256>                 development Apps' images and documents (the service's own storage)
//  GET /ipfs/<cid>                     production Apps' files, a minimal IPFS path gateway over the local blockstore
// Files are immutable (named by their hash), so they are cached for a year; they are typed from the stored
// bytes and served with a CSP sandbox: an uploaded SVG opened directly from this origin can run no script.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Ctx } from '../services/context.js';
import { tokenMetadata } from '../services/assets/reads.js';
import { itemTokenMetadata } from '../services/items/index.js';
import { errorBody } from '../util/errors.js';
import { isUid } from '../util/ids.js';
import { sniffContentType } from '../metadata/sniff.js';
import { IMMUTABLE_CACHE, isSha256Hex, metadataStorage } from '../metadata/store.js';
import { BlockCorruptError, BlockNotFoundError, NotAFileError, parseCid } from '../metadata/unixfs.js';

function sendContent(req: FastifyRequest, reply: FastifyReply, bytes: Buffer, etag: string, extra: Record<string, string> = {}) {
  reply
    .header('cache-control', IMMUTABLE_CACHE)
    .header('etag', etag)
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox")
    .header('access-control-allow-origin', '*'); // marketplaces and wallets read metadata cross-origin
  for (const [k, v] of Object.entries(extra)) reply.header(k, v);
  // Named by content: a matching validator means the client already has exactly these bytes.
  if (req.headers['if-none-match'] === etag) return reply.code(304).send();
  return reply.type(sniffContentType(bytes)).send(bytes);
}

export async function metadataRoutes(app: FastifyInstance<any, any, any, any, any>, ctx: Ctx): Promise<void> {
  const storage = metadataStorage(ctx.config);

  // tokenURI of development Apps' collections: baseURI (= PUBLIC_URL/metadata/<collection>/) + token id.
  app.get<{ Params: { collection: string; token: string } }>('/metadata/:collection/:token', { schema: { hide: true } }, async (req, reply) => {
    const { collection, token } = req.params;
    const id = Number(token);
    // An ERC-721 collection's asset, or an ERC-1155 collection's item (uri(id) is the same route).
    const doc =
      isUid(collection) && Number.isSafeInteger(id) && id > 0
        ? ((await tokenMetadata(ctx, collection, id)) ?? (await itemTokenMetadata(ctx, collection, id)))
        : null;
    if (!doc) return reply.code(404).send(errorBody('not_found', 'Token not found.'));
    // Editable: a short cache so an edit shows up within a minute.
    return reply.header('cache-control', 'public, max-age=60').type('application/json').send(doc);
  });

  app.get<{ Params: { sha: string } }>('/files/:sha', { schema: { hide: true } }, async (req, reply) => {
    const sha = req.params.sha.toLowerCase();
    const bytes = isSha256Hex(sha) ? await storage.files.get(sha) : null;
    if (!bytes) return reply.code(404).send(errorBody('not_found', 'File not found.'));
    return sendContent(req, reply, bytes, `"${sha}"`);
  });

  app.get<{ Params: { cid: string } }>('/ipfs/:cid', { schema: { hide: true } }, async (req, reply) => {
    const cid = parseCid(req.params.cid);
    if (!cid) return reply.code(404).send(errorBody('not_found', 'Content not found.'));
    let bytes: Buffer;
    try {
      bytes = await storage.catIpfs(cid, ctx.config.imageMaxBytes + 1024 * 1024);
    } catch (err) {
      // Only the root's absence means "not here"; a missing or damaged inner block is our fault.
      if (err instanceof BlockNotFoundError && err.cid === cid.toString()) return reply.code(404).send(errorBody('not_found', 'Content not found.'));
      if (err instanceof NotAFileError) return reply.code(404).send(errorBody('not_found', 'Content not found.'));
      if (err instanceof BlockCorruptError || err instanceof BlockNotFoundError)
        req.log.error({ cid: cid.toString(), err: (err as Error).message }, 'blockstore damaged');
      else req.log.error({ cid: cid.toString(), err }, 'gateway read failed');
      return reply.code(500).send(errorBody('internal_error', 'Stored content is damaged.'));
    }
    return sendContent(req, reply, bytes, `"${cid.toString()}"`, { 'x-ipfs-path': `/ipfs/${cid.toString()}` });
  });
}
