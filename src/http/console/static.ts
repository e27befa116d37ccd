// The console's files: the browser app built by `npm run build` (scripts/build-console.mjs) into
// build/console, loaded into memory once and served under /console with a strict Content-Security-
// Policy. Every other path under /console is a page of the app: it gets index.html, and the app's
// router shows the page (so every page has its own URL, bookmarkable). The same build holds the API
// reference, docs.html, served at /docs: it reads /openapi.json and needs no session.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from '../../util/errors.js';
import { BUILD_DIR } from '../../util/build-paths.js';

export const CONSOLE_BUILD_DIR = path.join(BUILD_DIR, 'console');

/**
 * Scripts, styles and fonts come from this origin only; nothing inline, no eval. Images may also come
 * from https hosts (asset images live where their owners put them); the page never sends a Referer.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: https:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
};

interface StaticFile {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
  etag: string;
  immutable: boolean;
}

function loadFiles(dir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  const walk = (d: string) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else {
        const rel = path.relative(dir, full).split(path.sep).join('/');
        const body = fs.readFileSync(full);
        const type = TYPES[path.extname(entry.name).toLowerCase()] ?? 'application/octet-stream';
        const compressible = /^(text\/|application\/json|image\/svg)/.test(type) && body.length > 1024;
        files.set(rel, {
          body,
          gzip: compressible ? zlib.gzipSync(body, { level: 9 }) : null,
          type,
          etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
          // Vite names built assets by content hash: they never change under their name.
          immutable: rel.startsWith('assets/'),
        });
      }
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return files;
}

export function securityHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('cross-origin-resource-policy', 'same-origin')
    .header('permissions-policy', 'camera=(), microphone=(), geolocation=(), payment=()');
}

export async function consoleStatic(app: FastifyInstance<any, any, any, any, any>, dir = CONSOLE_BUILD_DIR): Promise<void> {
  const files = loadFiles(dir);
  const index = files.get('index.html');
  const reference = files.get('docs.html');
  const pages = new Set(['index.html', 'docs.html']);

  const send = (req: FastifyRequest, reply: FastifyReply, f: StaticFile) => {
    securityHeaders(reply).header('etag', f.etag).header('vary', 'accept-encoding').type(f.type);
    reply.header('cache-control', f.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    if (req.headers['if-none-match'] === f.etag) return reply.code(304).send();
    if (f.gzip && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) return reply.header('content-encoding', 'gzip').send(f.gzip);
    return reply.send(f.body);
  };

  const notBuilt = (reply: FastifyReply) =>
    reply.code(503).type('text/plain; charset=utf-8').send('The console is not built: run `npm run build` (npm start does it).\n');
  const page = async (req: FastifyRequest, reply: FastifyReply) => (index ? send(req, reply, index) : notBuilt(reply));

  app.get('/docs', { schema: { hide: true } }, async (req, reply) => (reference ? send(req, reply, reference) : notBuilt(reply)));
  app.get('/console', { schema: { hide: true } }, page);
  app.get<{ Params: { '*': string } }>('/console/*', { schema: { hide: true } }, async (req, reply) => {
    const rel = req.params['*'];
    const f = files.get(rel);
    if (f && !pages.has(rel)) return send(req, reply, f);
    if (rel === 'api' || rel.startsWith('api/')) return reply.code(404).send(errorBody('not_found', 'Not Found'));
    // A missing file (a name with an extension) is a 404; anything else is a page of the app.
    if (/\.[a-z0-9]+$/i.test(rel)) return securityHeaders(reply).code(404).type('text/plain; charset=utf-8').send('Not found\n');
    return page(req, reply);
  });
}
