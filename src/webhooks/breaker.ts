// A circuit breaker per endpoint, in each dispatcher: after FAILURES_TO_OPEN failed attempts in a row,
// an endpoint gets no request for a cool-down (5 s, doubling up to 5 min), then one probe at a time until
// an attempt succeeds. Its deliveries stay due and are not attempted meanwhile (no attempt is spent, the
// 72-hour deadline is unchanged): a failing receiver is not sent its whole backlog one failure at a time,
// and the dispatcher's capacity goes to the endpoints that answer. In memory: a restart starts closed.
export const FAILURES_TO_OPEN = 5;
const FIRST_COOL_DOWN_MS = 5_000;
const MAX_COOL_DOWN_MS = 5 * 60_000;

interface State {
  failures: number;
  openUntil: number;
  coolDownMs: number;
}

export class EndpointBreakers {
  private readonly states = new Map<string, State>();

  /** How many requests `app` may have in flight now: 0 while open, 1 to probe, else `cap`. */
  allowance(app: string, now: number, cap: number): number {
    const s = this.states.get(app);
    if (!s || s.failures < FAILURES_TO_OPEN) return cap;
    return now < s.openUntil ? 0 : 1;
  }

  record(app: string, ok: boolean, now: number): void {
    if (ok) return void this.states.delete(app);
    const s = this.states.get(app) ?? { failures: 0, openUntil: 0, coolDownMs: 0 };
    s.failures++;
    if (s.failures >= FAILURES_TO_OPEN) {
      s.coolDownMs = s.coolDownMs ? Math.min(s.coolDownMs * 2, MAX_COOL_DOWN_MS) : FIRST_COOL_DOWN_MS;
      s.openUntil = now + s.coolDownMs;
    }
    this.states.set(app, s);
  }

  /** Apps whose breaker is open or probing. */
  tripped(): string[] {
    return [...this.states].filter(([, s]) => s.failures >= FAILURES_TO_OPEN).map(([app]) => app);
  }

  /** The configuration changed (new URL, re-enabled): start afresh. */
  reset(app: string): void {
    this.states.delete(app);
  }
}
