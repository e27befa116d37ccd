// Failed operator-token attempts, counted in the database so that every process of an installation
// shares them (http/kit/operator-attempts.ts applies them to requests). One row per scope — an
// address (`ip:<IPv4>` or `ip:<IPv6 /64>`) or `global` — each a window that starts at its first
// failure. A count is only ever removed once its window has ended (never to make room).
import net from 'node:net';
import { sql } from 'kysely';
import type { Ctx } from './context.js';
import { recordAudit, type Actor } from './audit.js';

export const GLOBAL = 'global';
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

export interface Limits {
  /** Failures per address in a window (0: no limit). */
  perAddress: number;
  /** Failures of all addresses together in a window (0: no limit). */
  global: number;
  windowMs: number;
}

export class OperatorAttemptCounts {
  private lastSweep = 0;
  constructor(
    private readonly ctx: Pick<Ctx, 'db'>,
    readonly limits: Limits,
    private readonly now: () => number = Date.now,
  ) {}

  /** When an address over its budget, or everyone over the global one, may try again (null: now). */
  async refusedUntil(ip: string): Promise<{ until: number; everyone: boolean } | null> {
    const { perAddress, global, windowMs } = this.limits;
    if (perAddress === 0 && global === 0) return null;
    const scope = addressScope(ip);
    const rows = await this.ctx.db
      .selectFrom('operator_attempts')
      .select(['scope', 'failures', 'window_start'])
      .where('scope', 'in', [scope, GLOBAL])
      .where('window_start', '>', this.now() - windowMs)
      .execute();
    const over = (key: string, max: number) => {
      const r = rows.find((x) => x.scope === key);
      return max > 0 && r && Number(r.failures) >= max ? Number(r.window_start) + windowMs : 0;
    };
    const mine = over(scope, perAddress);
    const all = over(GLOBAL, global);
    return mine || all ? { until: Math.max(mine, all), everyone: !mine } : null;
  }

  /** Counts a failed attempt of an address (and in the global count); audits a few per window. */
  async fail(ip: string, actor: Actor, path: string): Promise<void> {
    const { perAddress, global } = this.limits;
    if (perAddress === 0 && global === 0) return;
    const scope = addressScope(ip);
    const { address, total } = await this.count(scope);
    const lockedAddress = perAddress > 0 && address === perAddress;
    const lockedAll = global > 0 && total === global;
    if (lockedAll || ((address === 1 || lockedAddress) && total <= AUDITED_FAILURES)) {
      await recordAudit(this.ctx.db, actor, {
        action: lockedAll || lockedAddress ? 'operator.locked_out' : 'operator.sign_in_failed',
        details: { scope: lockedAll ? GLOBAL : scope, failures: lockedAll ? total : address, path: path.split('?')[0].slice(0, 200) },
      });
    }
    await this.sweep();
  }

  /** The right token: this address's count starts again (the global one does not). */
  async succeed(ip: string): Promise<void> {
    if (this.limits.perAddress === 0) return;
    await this.ctx.db.deleteFrom('operator_attempts').where('scope', '=', addressScope(ip)).execute();
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
