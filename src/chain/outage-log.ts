import type { Logger } from 'pino';

/**
 * How a loop that retries reports its failures. One failed pass (a provider's blip, a busy node) is a
 * warning, since the next pass retries it and nothing is lost; passes failing for `outageMs` on end are an
 * outage, an error logged once until a pass works again. A new reason during a run of failures is a new
 * warning; the same one is not repeated every pass.
 */
export class OutageLog {
  private failingSince: number | null = null;
  private lastReason: string | null = null;
  private outageReported = false;

  constructor(
    private readonly log: Pick<Logger, 'warn' | 'error'>,
    private readonly what: string,
    private readonly outageMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  failed(reason: string): void {
    const now = this.now();
    this.failingSince ??= now;
    const failingFor = now - this.failingSince;
    if (!this.outageReported && failingFor >= this.outageMs) {
      this.log.error({ err: reason, failing_for_s: Math.round(failingFor / 1000) }, `${this.what} error`);
      this.outageReported = true;
    } else if (reason !== this.lastReason) {
      this.log.warn({ err: reason }, `${this.what} pass failed, trying again`);
    }
    this.lastReason = reason;
  }

  worked(): void {
    this.failingSince = null;
    this.lastReason = null;
    this.outageReported = false;
  }
}
