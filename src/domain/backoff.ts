// Retry delay for failed jobs: exponential from 500 ms, capped at 5 minutes, with ±20 % jitter so a burst
// of failures does not retry in lockstep. Pure: the random source is injectable for tests.
export function retryDelayMs(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(500 * 2 ** Math.max(0, attempt - 1), 300_000);
  return Math.round(base * (0.8 + 0.4 * random()));
}
