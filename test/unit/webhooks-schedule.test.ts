// The retry schedule (src/webhooks/schedule.ts), proven over the whole 72 hours.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  baseDelayMs,
  CAP_WINDOW_MS,
  deadlineFor,
  DELIVERY_WINDOW_MS,
  HOUR,
  MAX_ATTEMPTS_PER_WINDOW,
  MINUTE,
  nextAttempt,
  parseRetryAfter,
  pushRecent,
  SECOND,
  windowFloor,
} from '../../src/webhooks/schedule.js';

/** The largest number of attempts inside any closed window of CAP_WINDOW_MS. Exhaustive: a window
 *  holding the most attempts can always be moved to start at one of them. */
function maxPerWindow(times: number[]): number {
  const t = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < t.length; i++) {
    while (j < t.length && t[j] <= t[i] + CAP_WINDOW_MS) j++;
    best = Math.max(best, j - i);
  }
  return best;
}

/**
 * Runs the schedule for an endpoint that always fails: attempt starts, the time the event would be
 * marked expired, and the gaps. `latency(n)` is how long attempt n takes to fail; `retryAfter(n)` the
 * Retry-After (ms) it answers with, if any.
 */
function simulate(opts: { random: () => number; latency?: (n: number) => number; retryAfter?: (n: number) => number | null; eventTime?: number }) {
  const eventTime = opts.eventTime ?? 1_700_000_000_000;
  const deadline = deadlineFor(eventTime);
  const starts: number[] = [];
  let recent: number[] = [];
  let due = eventTime;
  for (let n = 1; ; n++) {
    assert.ok(n < 1000, 'runaway schedule');
    const start = Math.max(due, windowFloor(recent)); // what the dispatcher enforces before sending
    assert.ok(start < deadline);
    starts.push(start);
    recent = pushRecent(recent, start);
    const failedAt = start + (opts.latency?.(n) ?? 0);
    const step = nextAttempt({ attemptsMade: n, failedAt, retryAfterMs: opts.retryAfter?.(n) ?? null, recentStarts: recent, deadline, random: opts.random });
    if (step.kind === 'expire') return { starts, expiredAt: step.at, deadline, eventTime };
    assert.ok(step.at > failedAt, 'the next attempt is after the failure');
    due = step.at;
  }
}

const JITTERS: [string, () => number][] = [
  ['no jitter', () => 0],
  ['maximum jitter', () => 1],
  [
    'alternating jitter',
    (() => {
      let i = 0;
      return () => (i++ % 2 ? 1 : 0);
    })(),
  ],
  ['random jitter', Math.random],
];

describe('webhook retry schedule', () => {
  it('has the documented delays', () => {
    assert.deepEqual(
      Array.from({ length: 12 }, (_, i) => baseDelayMs(i + 1) / SECOND),
      [5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 3600, 3600],
    );
  });

  it('retries the first failure within 30 s, even with maximum jitter and a 15 s timeout', () => {
    const step = nextAttempt({ attemptsMade: 1, failedAt: 15 * SECOND, retryAfterMs: null, recentStarts: [0], deadline: deadlineFor(0), random: () => 1 });
    assert.equal(step.kind, 'retry');
    assert.ok(step.at - 15 * SECOND <= 30 * SECOND, `first resend ${step.at - 15 * SECOND} ms after the failure`);
    assert.ok(step.at - 15 * SECOND >= 5 * SECOND);
  });

  for (const [name, random] of JITTERS) {
    for (const latencyMs of [0, 15 * SECOND]) {
      it(`never exceeds ${MAX_ATTEMPTS_PER_WINDOW} attempts in any 60-minute window over 72 h (${name}, ${latencyMs / SECOND} s per attempt)`, () => {
        const { starts, expiredAt, deadline, eventTime } = simulate({ random, latency: () => latencyMs });
        assert.ok(maxPerWindow(starts) <= MAX_ATTEMPTS_PER_WINDOW, `max per window ${maxPerWindow(starts)}`);
        // Stronger, and what the proof in schedule.ts rests on: 10 consecutive attempts never fit in an hour.
        for (let i = 0; i + 9 < starts.length; i++) assert.ok(starts[i + 9] - starts[i] > CAP_WINDOW_MS, `attempts ${i + 1}..${i + 10} within an hour`);
        assert.ok(starts[1] - (starts[0] + latencyMs) <= 30 * SECOND, 'first resend within 30 s');
        assert.ok(starts.at(-1)! < eventTime + 72 * HOUR, 'last attempt before 72 h');
        assert.ok(starts.at(-1)! > eventTime + 70 * HOUR, `keeps trying until near the end (last at ${(starts.at(-1)! - eventTime) / HOUR} h)`);
        assert.equal(expiredAt, deadline);
        assert.equal(deadline - eventTime, DELIVERY_WINDOW_MS);
      });
    }
  }

  it('makes 80 attempts in 72 h without jitter or latency (9 in the first hour, then hourly)', () => {
    const { starts, eventTime } = simulate({ random: () => 0 });
    assert.equal(starts.length, 80);
    assert.deepEqual(
      starts.slice(0, 11).map((t) => (t - eventTime) / SECOND),
      [0, 5, 20, 50, 110, 230, 530, 1130, 2330, 4130, 7730],
    );
  });

  it('holds the cap whatever Retry-After, latency and jitter do', () => {
    let seed = 42;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let run = 0; run < 200; run++) {
      const { starts } = simulate({
        random: rnd,
        latency: () => Math.floor(rnd() * 15 * SECOND),
        retryAfter: () => (rnd() < 0.3 ? Math.floor(rnd() * 10 * MINUTE) : rnd() < 0.1 ? 0 : null),
      });
      assert.ok(maxPerWindow(starts) <= MAX_ATTEMPTS_PER_WINDOW);
    }
  });

  it('windowFloor holds the cap for attempts that are not scheduled retries (manual redeliveries)', () => {
    // An operator asking for a redelivery every second: the floor lets 10 through, then waits an hour.
    let recent: number[] = [];
    const starts: number[] = [];
    for (let t = 0; t < 3 * HOUR; t += SECOND) {
      if (t >= windowFloor(recent)) {
        starts.push(t);
        recent = pushRecent(recent, t);
      }
    }
    assert.equal(maxPerWindow(starts), MAX_ATTEMPTS_PER_WINDOW);
    assert.equal(starts.length, 30);
    assert.equal(windowFloor([1, 2, 3]), -Infinity);
    assert.deepEqual(pushRecent([5, 1, 3, 2, 4, 6, 7, 8, 9, 10], 11), [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  });

  it('honours Retry-After (only ever to wait longer)', () => {
    const base = { attemptsMade: 1, failedAt: 1000, recentStarts: [0], deadline: deadlineFor(0), random: () => 0 };
    assert.deepEqual(nextAttempt({ ...base, retryAfterMs: 10 * MINUTE }), { kind: 'retry', at: 1000 + 10 * MINUTE });
    assert.deepEqual(nextAttempt({ ...base, retryAfterMs: 0 }), { kind: 'retry', at: 1000 + 5 * SECOND });
    assert.deepEqual(nextAttempt({ ...base, retryAfterMs: null }), { kind: 'retry', at: 1000 + 5 * SECOND });
    // A Retry-After past the deadline: the event expires at the deadline instead of being sent late.
    assert.deepEqual(nextAttempt({ ...base, retryAfterMs: 100 * HOUR }), { kind: 'expire', at: deadlineFor(0) });
  });

  it('expires when the next attempt would not start before the deadline', () => {
    const deadline = deadlineFor(0);
    assert.deepEqual(nextAttempt({ attemptsMade: 50, failedAt: deadline - 30 * MINUTE, retryAfterMs: null, recentStarts: [], deadline, random: () => 0 }), {
      kind: 'expire',
      at: deadline,
    });
    assert.deepEqual(nextAttempt({ attemptsMade: 50, failedAt: deadline - 61 * MINUTE, retryAfterMs: null, recentStarts: [], deadline, random: () => 0 }), {
      kind: 'retry',
      at: deadline - MINUTE,
    });
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2024-02-26T13:00:00Z');
    assert.equal(parseRetryAfter('120', now), 120 * SECOND);
    assert.equal(parseRetryAfter(' 0 ', now), 0);
    assert.equal(parseRetryAfter('Mon, 26 Feb 2024 13:05:00 GMT', now), 5 * MINUTE);
    assert.equal(parseRetryAfter('Mon, 26 Feb 2024 12:00:00 GMT', now), 0); // in the past
    assert.equal(parseRetryAfter(undefined, now), null);
    assert.equal(parseRetryAfter('soon', now), null);
    assert.equal(parseRetryAfter('1.5', now), null);
    assert.equal(parseRetryAfter('-3', now), null);
    // Never more than an hour: a receiver cannot park an event until it expires.
    assert.equal(parseRetryAfter('3600', now), HOUR);
    assert.equal(parseRetryAfter('86400', now), HOUR);
    assert.equal(parseRetryAfter('99999999999999999999', now), HOUR);
    assert.equal(parseRetryAfter('Mon, 26 Feb 2024 15:00:00 GMT', now), HOUR);
    assert.equal(parseRetryAfter('Tue, 26 Feb 2030 13:00:00 GMT', now), HOUR);
  });
});
