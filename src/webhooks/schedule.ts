// The retry schedule of webhook deliveries (docs/api.md, Webhooks). Pure: no clock, no I/O,
// so the whole 72-hour schedule can be proven by the unit tests.
//
// Delays after the n-th failed attempt: 5 s, 15 s, 30 s, 1 m, 2 m, 5 m, 10 m, 20 m, 30 m, then every
// 60 m until the 72 hours are up. Attempt times from the event: 0, 5 s, 20 s, 50 s, 1m50, 3m50, 8m50,
// 18m50, 38m50, 68m50, then hourly: 80 attempts in all when the endpoint never answers quickly.
//
// Why this satisfies "at most 10 attempts in any 60-minute window": the smallest sum of 9 consecutive
// delays is the first nine, 4130 s > 3600 s, so even 10 consecutive attempts never fit in an hour.
// Everything else only lengthens gaps (jitter is added, never subtracted; Retry-After and slow
// responses push the next attempt later; the next delay counts from the end of a failed attempt), and
// lengthening gaps cannot put more attempts into a window. What is not a scheduled retry (a manual
// redelivery, a reconfigured URL making waiting events due now) is held to the cap by `windowFloor`,
// which the dispatcher applies before every send.

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;

/** Events are resent until this long after event_time, then they are `expired`. */
export const DELIVERY_WINDOW_MS = 72 * HOUR;
/** A manual redelivery gives the event at least this long to succeed (retrying as usual). */
export const REDELIVERY_WINDOW_MS = 1 * HOUR;

export const RETRY_DELAYS_MS: readonly number[] = [
  5 * SECOND,
  15 * SECOND,
  30 * SECOND,
  1 * MINUTE,
  2 * MINUTE,
  5 * MINUTE,
  10 * MINUTE,
  20 * MINUTE,
  30 * MINUTE,
];
export const STEADY_DELAY_MS = 60 * MINUTE;

/** The cap: at most MAX_ATTEMPTS_PER_WINDOW attempts of one event in any CAP_WINDOW_MS. */
export const CAP_WINDOW_MS = 60 * MINUTE;
export const MAX_ATTEMPTS_PER_WINDOW = 10;

/** Up to +10 %: many events failing together (an endpoint down) spread out when it comes back. */
export const JITTER = 0.1;

/** The delay after the `attemptsMade`-th failed attempt (1-based), without jitter. */
export function baseDelayMs(attemptsMade: number): number {
  if (attemptsMade < 1) return 0;
  return RETRY_DELAYS_MS[attemptsMade - 1] ?? STEADY_DELAY_MS;
}

/** When resending stops: no attempt starts at or after this (event time + 72 h). */
export function deadlineFor(eventTimeMs: number): number {
  return eventTimeMs + DELIVERY_WINDOW_MS;
}

/**
 * The longest a receiver's `Retry-After` can hold an event back: the steady retry interval. A receiver
 * answering `Retry-After: 86400` (or a date next year) would otherwise park the event until it expires.
 */
export const MAX_RETRY_AFTER_MS = 1 * HOUR;

/**
 * `Retry-After` in ms from `nowMs`: delta-seconds or an HTTP-date, at most MAX_RETRY_AFTER_MS; null when
 * absent or malformed. Past dates give 0.
 */
export function parseRetryAfter(value: string | undefined | null, nowMs: number): number | null {
  if (value == null) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Math.min(Number(v) * SECOND, MAX_RETRY_AFTER_MS);
  if (!/[a-z]/i.test(v)) return null; // "1.5", "-3": not delta-seconds, and not a date either
  const t = Date.parse(v);
  if (Number.isNaN(t)) return null;
  return Math.min(Math.max(0, t - nowMs), MAX_RETRY_AFTER_MS);
}

/**
 * The earliest a new attempt may start so that no CAP_WINDOW_MS window holds more than
 * MAX_ATTEMPTS_PER_WINDOW attempts: when the last 10 attempts started at t1 ≤ … ≤ t10, an 11th at t
 * shares a window with all of them iff t - t1 < 60 min (a window is closed on both ends here, to be
 * safe), so t must be > t1 + 60 min.
 */
export function windowFloor(recentStarts: readonly number[]): number {
  if (recentStarts.length < MAX_ATTEMPTS_PER_WINDOW) return -Infinity;
  const sorted = [...recentStarts].sort((a, b) => a - b);
  return sorted[sorted.length - MAX_ATTEMPTS_PER_WINDOW] + CAP_WINDOW_MS + 1;
}

/** The start times kept on the delivery row: the last MAX_ATTEMPTS_PER_WINDOW. */
export function pushRecent(recentStarts: readonly number[], startedAt: number): number[] {
  return [...recentStarts, startedAt].sort((a, b) => a - b).slice(-MAX_ATTEMPTS_PER_WINDOW);
}

export type NextStep = { kind: 'retry'; at: number } | { kind: 'expire'; at: number };

/**
 * After a failed attempt: when to try again, or that the event expires (at its deadline: the event
 * stays `pending` with nothing more to send until then, and is marked `expired` when the deadline
 * passes). `failedAt` is when the failed attempt ended.
 */
export function nextAttempt(p: {
  attemptsMade: number;
  failedAt: number;
  retryAfterMs: number | null;
  recentStarts: readonly number[];
  deadline: number;
  random?: () => number;
}): NextStep {
  const jitter = 1 + JITTER * Math.min(Math.max((p.random ?? Math.random)(), 0), 1);
  const scheduled = p.failedAt + Math.round(baseDelayMs(p.attemptsMade) * jitter);
  // Retry-After can only make us wait longer than the schedule, never shorter: the cap comes first.
  const requested = p.retryAfterMs === null ? -Infinity : p.failedAt + p.retryAfterMs;
  const at = Math.max(scheduled, requested, windowFloor(p.recentStarts));
  return at >= p.deadline ? { kind: 'expire', at: p.deadline } : { kind: 'retry', at };
}
