// The management API protects itself: mounted on a bare server (none of the app's hooks), every route
// of src/http/admin and every unknown path under /admin/v1 answers 401 without the operator token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type RouteOptions } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { adminApi, ADMIN_PREFIX } from '../../src/http/admin/index.js';
import { exactJsonReplies } from '../../src/http/kit/openapi.js';
import type { Ctx } from '../../src/services/context.js';
import { ApiError } from '../../src/util/errors.js';

const TOKEN = 'operator-token-for-the-scope-test';

async function bareServer() {
  const app = Fastify();
  app.setValidatorCompiler(validatorCompiler);
  exactJsonReplies(app); // the area documents its routes' answers; replies stay JSON.stringify's, as on the server
  app.setErrorHandler(async (err, _req, reply) => reply.code(err instanceof ApiError ? err.status : 500).send({ message: (err as Error).message }));
  const routes: { method: string; url: string }[] = [];
  app.addHook('onRoute', (r: RouteOptions) => {
    for (const method of [r.method].flat()) if (method !== 'HEAD') routes.push({ method, url: r.url });
  });
  // Only the token is read before a handler runs: the services behind the routes are never reached.
  // The lockout (counted in the database) is off: this server has none.
  await adminApi(app, { config: { operatorAuthFailures: 0, operatorAuthGlobalFailures: 0 }, installation: { operatorToken: TOKEN } } as unknown as Ctx);
  await app.ready();
  return { app, routes };
}

test('every admin route and unknown path answers 401 without the operator token', async () => {
  const { app, routes } = await bareServer();
  assert.ok(routes.length >= 10, `admin routes registered: ${routes.length}`);
  const paths = [...routes, { method: 'GET', url: `${ADMIN_PREFIX}/nope` }, { method: 'POST', url: `${ADMIN_PREFIX}/apps/1/nope` }];
  let n = 0;
  for (const { method, url } of paths) {
    const concrete = url.replace(/:[a-z_]+/g, '1');
    for (const authorization of [undefined, 'Bearer wrong-token', TOKEN]) {
      // Each from an address of its own: wrong tokens from one address are refused 429 after ten.
      const remoteAddress = `10.0.${(n >> 8) & 255}.${n++ & 255}`;
      const res = await app.inject({
        method: method as any,
        url: concrete,
        remoteAddress,
        headers: authorization ? { authorization } : {},
        payload: method === 'GET' ? undefined : {},
      });
      assert.equal(res.statusCode, 401, `${method} ${concrete} with ${authorization ?? 'no authorization'}`);
    }
  }
  // With the token the check lets the request through (an unknown path is then a plain 404).
  const res = await app.inject({ method: 'GET', url: `${ADMIN_PREFIX}/nope`, headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(res.statusCode, 404);
  await app.close();
});
