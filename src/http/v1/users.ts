// /v1/user: create a user, read one by uid, find one by email or external id.
import type { Ctx } from '../../services/context.js';
import { ApiError } from '../../util/errors.js';
import * as s from '../kit/schemas.js';
import { ok, uidOr404, type App } from '../kit/route-kit.js';
import { createUser, findUser, getUser } from '../../services/users/users.js';
import { created, userObject } from '../kit/objects.js';
import type { RouteDocs } from '../kit/openapi.js';

export async function userRoutes(app: App, ctx: Ctx): Promise<void> {
  const tags = { tags: ['users'] };

  app.post('/user', { schema: { ...tags, body: s.createUserBody } }, async (req, reply) => {
    return reply.code(201).send(ok(await createUser(ctx, req.appUid, req.body ?? {}, req.idempotency)));
  });

  app.get('/user/:uid', { schema: { ...tags, params: s.uidParam } }, async (req) => {
    return ok(await getUser(ctx, req.appUid, uidOr404(req.params.uid, 'User')));
  });

  app.get('/user', { schema: { ...tags, querystring: s.userLookupQuery } }, async (req) => {
    const q = req.query;
    if (q.email !== undefined) return ok(await findUser(ctx, req.appUid, 'email', q.email));
    const ext = q.user_external_id ?? q.client_id;
    if (ext !== undefined) return ok(await findUser(ctx, req.appUid, 'user_external_id', ext));
    throw ApiError.of('not_found');
  });
}

/** What /openapi.json says of these routes' answers: joined to them as they are registered (a route without one fails to register). */
export const usersDocs = {
  'POST /user': {
    operationId: 'createUser',
    summary: 'Create a user',
    description: 'Both fields are optional and unique per App. The wallet is created at the first mint or GET /deposit.',
    status: 201,
    data: created,
  },
  'GET /user/:uid': { operationId: 'getUser', summary: 'Get a user', data: userObject },
  'GET /user': {
    operationId: 'findUser',
    summary: 'Find a user by email or external id',
    description: 'Exactly one of `email` (case-insensitive) or `user_external_id` (alias `client_id`).',
    data: userObject,
  },
} satisfies RouteDocs;
