// Failed operator-token attempts, wherever the token is taken (the console sign-in, the console's
// Bearer, /admin/v1): a guesser cannot spread guesses across them, nor across API processes (the
// counts are in the database: services/operator-attempts.ts). Two budgets, each a window
// that starts at its first failure:
//  - per client address (OPERATOR_AUTH_FAILURES, 10 in 15 min): over it, that address is refused (429,
//    with Retry-After) before the token is looked at, the right one included, until its window ends;
//    an IPv6 address counts by its /64 (one host usually holds the whole /64);
//  - for everyone (OPERATOR_AUTH_GLOBAL_FAILURES, 1000 in 15 min): over it, every attempt with a token is
//    refused until the window ends, so guessing stays slow whatever the number of addresses.
// A success clears only its own address's count. Failed attempts are audited, a few per window (the
// first and the locking one of an address while the global count is low, and the global lockout).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Ctx } from '../../services/context.js';
import { OperatorAttemptCounts } from '../../services/operator-attempts.js';
import { ApiError } from '../../util/errors.js';
import { requestActor } from './actor.js';

export { addressScope } from '../../services/operator-attempts.js';

export class OperatorAttempts {
  constructor(
    private readonly counts: OperatorAttemptCounts,
    private readonly now: () => number = Date.now,
  ) {}

  /** Refuses (429, Retry-After) an attempt from an address, or from anyone, over its budget. */
  async check(req: FastifyRequest, reply: FastifyReply, what = 'operator-token attempts'): Promise<void> {
    const refused = await this.counts.refusedUntil(req.ip);
    if (!refused) return;
    const seconds = Math.max(1, Math.ceil((refused.until - this.now()) / 1000));
    reply.header('retry-after', String(seconds));
    const who = refused.everyone ? 'from all addresses together' : 'from this address';
    throw ApiError.of('too_many_attempts', `Too many failed ${what} ${who}: try again in ${Math.ceil(seconds / 60)} min.`);
  }

  /** Counts a failed attempt of the request's address (and in the global budget). */
  fail(req: FastifyRequest): Promise<void> {
    return this.counts.fail(req.ip, requestActor(req), req.url);
  }

  /** The right token: this address's count starts again. */
  succeed(req: FastifyRequest): Promise<void> {
    return this.counts.succeed(req.ip);
  }
}

const perConfig = new WeakMap<object, OperatorAttempts>();

/** The service's attempts (keyed by its config object: tests run several services in one process). */
export function operatorAttempts(ctx: Pick<Ctx, 'db' | 'config'>): OperatorAttempts {
  let a = perConfig.get(ctx.config);
  if (!a) {
    const c = ctx.config;
    const limits = { perAddress: c.operatorAuthFailures ?? 10, global: c.operatorAuthGlobalFailures ?? 1000, windowMs: 15 * 60 * 1000 };
    a = new OperatorAttempts(new OperatorAttemptCounts(ctx, limits));
    perConfig.set(ctx.config, a);
  }
  return a;
}

/** The Bearer token of a request, if it sends one. */
export function bearer(req: FastifyRequest): string | null {
  return /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? null;
}
