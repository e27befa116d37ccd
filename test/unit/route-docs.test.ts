// Each route module declares its routes' answers (their docs); an area joins them to its routes as they
// are registered. A route registered without a doc fails to register, so the server does not start
// with a route the OpenAPI document leaves out.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { z } from 'zod';
import { areaDocs, documentArea, exactJsonReplies, type RouteDocs } from '../../src/http/kit/openapi.js';
import { V1_DOCS } from '../../src/http/v1/index.js';
import { ADMIN_DOCS } from '../../src/http/admin/index.js';

const docs = { 'GET /thing/:uid': { operationId: 'getThing', summary: 'Get a thing', data: z.object({ uid: z.string() }) } } satisfies RouteDocs;

/** A server with one area, /v9, documented by `withDocs`, and one route in it; what the route's schema became. */
async function start(withDocs: RouteDocs) {
  const app = Fastify();
  exactJsonReplies(app); // as the server does: the response schemas document, JSON.stringify answers
  const seen: { schema?: { operationId?: string; summary?: string; response?: Record<number, unknown> } } = {};
  app.register(
    async (scope) => {
      documentArea(scope, areaDocs('/v9', withDocs));
      scope.addHook('onRoute', (r) => {
        if (r.method === 'GET') seen.schema = r.schema as typeof seen.schema; // after the area's hook: what it joined
      });
      scope.get('/thing/:uid', async () => ({ ok: true }));
    },
    { prefix: '/v9' },
  );
  await app.ready();
  return { app, seen };
}

describe('route docs', () => {
  it('a route registered without its doc fails to register, naming it', async () => {
    await assert.rejects(start({}), /GET \/v9\/thing\/:uid has no doc/);
  });

  it('a documented route starts, its doc joined to it (operation, summary, answers by status)', async () => {
    const { app, seen } = await start(docs);
    assert.equal(seen.schema?.operationId, 'getThing');
    assert.equal(seen.schema?.summary, 'Get a thing');
    assert.deepEqual(Object.keys(seen.schema?.response ?? {}).sort(), ['200', '400', '401', '404', '429']);
    await app.close();
  });

  it("the areas' docs are keyed by whole paths, each operation named once", () => {
    const all = { ...V1_DOCS, ...ADMIN_DOCS };
    assert.equal(Object.keys(all).length, Object.keys(V1_DOCS).length + Object.keys(ADMIN_DOCS).length);
    for (const key of Object.keys(V1_DOCS)) assert.match(key, /^(GET|POST|PUT|PATCH|DELETE) \/v1\//);
    for (const key of Object.keys(ADMIN_DOCS)) assert.match(key, /^(GET|POST|PUT|PATCH|DELETE) \/admin\/v1\//);
    const ids = Object.values(all).map((d) => d.operationId);
    assert.equal(new Set(ids).size, ids.length);
  });
});
