// The operator token, the one credential of the management API: `Authorization: Bearer <OPERATOR_TOKEN>`,
// compared in constant time (digests of equal length). No token configured: nothing is let in.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Ctx } from '../../services/context.js';
import { ApiError } from '../../util/errors.js';
import { bearer, operatorAttempts } from '../kit/operator-attempts.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** The operator token check, for every request under /admin/v1: routes, unknown paths and bad URLs alike. */
export function operatorGuard(ctx: Ctx) {
  const expected = digest(ctx.installation.operatorToken ?? '');
  const attempts = operatorAttempts(ctx);
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const token = bearer(req);
    // A request without a token is no guess: it is refused without counting.
    if (token !== null) await attempts.check(req, reply);
    if (!ctx.installation.operatorToken || token === null || !timingSafeEqual(digest(token), expected)) {
      if (token !== null) await attempts.fail(req);
      throw ApiError.of('unauthorized', 'Operator token required (Authorization: Bearer <OPERATOR_TOKEN>).');
    }
  };
}
