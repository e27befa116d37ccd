// The operator token, the one credential of the management API: `Authorization: Bearer <OPERATOR_TOKEN>`,
// compared in constant time (digests of equal length). No token configured: nothing is let in.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Ctx } from '../../services/context.js';
import { ApiError } from '../../util/errors.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** The operator token check, for every request under /admin/v1: routes, unknown paths and bad URLs alike. */
export function operatorGuard(ctx: Ctx) {
  const expected = digest(ctx.config.operatorToken ?? '');
  return async (req: FastifyRequest): Promise<void> => {
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!ctx.config.operatorToken || !m || !timingSafeEqual(digest(m[1]), expected)) {
      throw ApiError.client(401, 'unauthorized', 'Operator token required (Authorization: Bearer <OPERATOR_TOKEN>).');
    }
  };
}
