// What every route file needs: the success envelope, path uids that cannot exist, the App of a
// management path. One copy, so that the answers cannot drift apart between route files.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Ctx } from '../../services/context.js';
import { getApp } from '../../services/apps/registry.js';
import { ApiError } from '../../util/errors.js';
import { isUid } from '../../util/ids.js';

/** A Fastify scope with zod schemas, as the route files register on. */
export type App = FastifyInstance<any, any, any, any, ZodTypeProvider>;

/** The success envelope (docs/api.md, Envelope and errors). */
export const ok = (data: unknown) => ({ success: true, data });

/** A path uid that is not a 12-digit uid cannot exist: answer as for an unknown one. */
export function uidOr404(uid: string, resource: string): string {
  if (uid === '') throw ApiError.of('not_found'); // `GET /user/` is no lookup
  if (!isUid(uid)) throw ApiError.notFound(resource);
  return uid;
}

/** The App of a management path, or 404 App. Returns its uid. */
export async function requireApp(ctx: Ctx, uid: string): Promise<string> {
  if (!(await getApp(ctx, uid))) throw ApiError.notFound('App');
  return uid;
}
