// Failed operator-token attempts per client address: after `max` within `windowMs`, every further
// attempt from that address is refused (429) before the token is looked at, the right one included,
// until the window ends. One count per process for every place the token is checked (console sign-in,
// console Bearer, /admin/v1), so a guesser cannot spread guesses across them.
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../util/errors.js';

export class OperatorAttempts {
  private readonly failures = new Map<string, { n: number; since: number }>();
  constructor(
    private readonly max = 10,
    private readonly windowMs = 15 * 60 * 1000,
    private readonly now: () => number = Date.now,
  ) {}

  check(ip: string, what = 'sign-ins'): void {
    if (this.max === 0) return;
    const f = this.failures.get(ip);
    if (f && this.now() - f.since > this.windowMs) this.failures.delete(ip);
    else if (f && f.n >= this.max) {
      throw ApiError.client(
        429,
        'too_many_attempts',
        `Too many failed ${what}: try again in ${Math.ceil((f.since + this.windowMs - this.now()) / 60000)} min.`,
      );
    }
  }

  fail(ip: string): void {
    const f = this.failures.get(ip);
    if (this.failures.size > 10_000) this.failures.clear();
    this.failures.set(ip, f ? { n: f.n + 1, since: f.since } : { n: 1, since: this.now() });
  }

  succeed(ip: string): void {
    this.failures.delete(ip);
  }
}

const perConfig = new WeakMap<object, OperatorAttempts>();

/**
 * The process's count for one service (keyed by its config object: tests run several services);
 * `operatorAuthFailures` (OPERATOR_AUTH_FAILURES) attempts, 0 = no limit.
 */
export function operatorAttempts(config: { operatorAuthFailures?: number }): OperatorAttempts {
  let a = perConfig.get(config);
  if (!a) perConfig.set(config, (a = new OperatorAttempts(config.operatorAuthFailures ?? 10)));
  return a;
}

/** The Bearer token of a request, if it sends one. */
export function bearer(req: FastifyRequest): string | null {
  return /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? null;
}
