// Failed operator-token attempts, counted in the database so that every process of an installation
// shares them (the console sign-in, the console's Bearer and /admin/v1 alike: a guesser cannot spread
// guesses across them, nor across API processes). Two budgets, each a window that starts at its first
// failure:
//  - per client address (OPERATOR_AUTH_FAILURES, 10 in 15 min): over it, that address is refused (429,
//    with Retry-After) before the token is looked at, the right one included, until its window ends;
//    an IPv6 address counts by its /64 (one host usually holds the whole /64);
//  - for everyone (OPERATOR_AUTH_GLOBAL_FAILURES, 1000 in 15 min): over it, every attempt with a token is
//    refused until the window ends, so guessing stays slow whatever the number of addresses.
// A count is only ever removed once its window has ended (never to make room), and a success clears
// only its own address's count. Failed attempts are audited, a few per window (the first and the
// locking one of an address, while the global count is low, and the locking one of the global budget).
import net from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import type { Ctx } from '../../services/context.js';
import { recordAudit } from '../../services/audit.js';
import { ApiError } from '../../util/errors.js';
import { requestActor } from './actor.js';

const GLOBAL = 'global';
/** Failed attempts audited one by one while the window's global count is under this. */
const AUDITED_FAILURES = 100;

/** The scope an address is counted in: an IPv4 address itself, an IPv6 address's /64. */
export function addressScope(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return `ip:${mapped[1]}`;
  if (!net.isIPv6(ip)) return `ip:${ip}`;
  const [head, tail = ''] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  if (right.length && right[right.length - 1].includes('.')) right.splice(-1, 1, '0', '0'); // an embedded IPv4 tail
  const groups = ip.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `ip:${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g || '0', 16).toString(16))
    .join(':')}::/64`;
}

interface Budget {
  failures: number;
  window_start: number;
}

export class OperatorAttempts {
  private lastSweep = 0;
  constructor(
    private readonly ctx: Pick<Ctx, 'db'>,
    private readonly limits: { perAddress: number; global: number; windowMs: number },
    private readonly now: () => number = Date.now,
  ) {}

  private async budgets(scope: string): Promise<Map<string, Budget>> {
    const since = this.now() - this.limits.windowMs;
    const rows = await this.ctx.db
      .selectFrom('operator_attempts')
      .select(['scope', 'failures', 'window_start'])
      .where('scope', 'in', [scope, GLOBAL])
      .where('window_start', '>', since)
      .execute();
    return new Map(rows.map((r) => [r.scope, { failures: Number(r.failures), window_start: Number(r.window_start) }]));
  }

  /** Refuses (429, Retry-After) an attempt from an address, or from anyone, over its budget. */
  async check(req: FastifyRequest, reply: FastifyReply, what = 'operator-token attempts'): Promise<void> {
    const { perAddress, global, windowMs } = this.limits;
    if (perAddress === 0 && global === 0) return;
    const b = await this.budgets(addressScope(req.ip));
    const over = (key: string, max: number) => {
      const x = b.get(key);
      return max > 0 && x && x.failures >= max ? x : null;
    };
    const mine = over(addressScope(req.ip), perAddress);
    const all = over(GLOBAL, global);
    const until = Math.max(mine ? mine.window_start + windowMs : 0, all ? all.window_start + windowMs : 0);
    if (!until) return;
    const seconds = Math.max(1, Math.ceil((until - this.now()) / 1000));
    reply.header('retry-after', String(seconds));
    const who = mine ? `from this address` : 'from all addresses together';
    throw ApiError.client(429, 'too_many_attempts', `Too many failed ${what} ${who}: try again in ${Math.ceil(seconds / 60)} min.`);
  }

  /** Counts a failed attempt of the request's address (and in the global budget). */
  async fail(req: FastifyRequest): Promise<void> {
    const { perAddress, global } = this.limits;
    if (perAddress === 0 && global === 0) return;
    const scope = addressScope(req.ip);
    const { address, total } = await this.count(scope);
    const lockedAddress = perAddress > 0 && address === perAddress;
    const lockedAll = global > 0 && total === global;
    if (lockedAll || ((address === 1 || lockedAddress) && total <= AUDITED_FAILURES)) {
      await recordAudit(this.ctx.db, requestActor(req), {
        action: lockedAll || lockedAddress ? 'operator.locked_out' : 'operator.sign_in_failed',
        details: { scope: lockedAll ? GLOBAL : scope, failures: lockedAll ? total : address, path: req.url.split('?')[0].slice(0, 200) },
      });
    }
    await this.sweep();
  }

  /** The right token: this address's count starts again (the global one does not). */
  async succeed(req: FastifyRequest): Promise<void> {
    if (this.limits.perAddress === 0) return;
    await this.ctx.db.deleteFrom('operator_attempts').where('scope', '=', addressScope(req.ip)).execute();
  }

  /** One more failure of the address and in the global count (a new window where one ended): both counts after it, in one statement. */
  private async count(scope: string): Promise<{ address: number; total: number }> {
    const now = this.now();
    const expired = now - this.limits.windowMs;
    const r = await sql<{ scope: string; failures: number | string }>`
      insert into operator_attempts (scope, window_start, failures) values (${scope}, ${now}, 1), (${GLOBAL}, ${now}, 1)
      on conflict (scope) do update set
        failures = case when operator_attempts.window_start <= ${expired} then 1 else operator_attempts.failures + 1 end,
        window_start = case when operator_attempts.window_start <= ${expired} then excluded.window_start else operator_attempts.window_start end
      returning scope, failures`.execute(this.ctx.db);
    const of = (k: string) => Number(r.rows.find((x) => x.scope === k)?.failures ?? 0);
    return { address: of(scope), total: of(GLOBAL) };
  }

  /** Counts whose window has ended are removed (a minute apart at most): only those, ever. */
  private async sweep(): Promise<void> {
    const now = this.now();
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    await this.ctx.db
      .deleteFrom('operator_attempts')
      .where('window_start', '<=', now - this.limits.windowMs)
      .execute();
  }
}

const perConfig = new WeakMap<object, OperatorAttempts>();

/** The service's attempts (keyed by its config object: tests run several services in one process). */
export function operatorAttempts(ctx: Pick<Ctx, 'db' | 'config'>): OperatorAttempts {
  let a = perConfig.get(ctx.config);
  if (!a) {
    const c = ctx.config;
    a = new OperatorAttempts(ctx, { perAddress: c.operatorAuthFailures ?? 10, global: c.operatorAuthGlobalFailures ?? 1000, windowMs: 15 * 60 * 1000 });
    perConfig.set(ctx.config, a);
  }
  return a;
}

/** The Bearer token of a request, if it sends one. */
export function bearer(req: FastifyRequest): string | null {
  return /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? null;
}
