// Timestamps are ISO 8601 UTC with microseconds ("2024-02-26T13:12:31.798296Z"). Within one process
// they are strictly increasing, so "newest first" lists have a stable order even inside a millisecond.
let lastMicros = 0n;

export function nowMicros(): bigint {
  const wall = BigInt(Date.now()) * 1000n;
  lastMicros = wall > lastMicros ? wall : lastMicros + 1n;
  return lastMicros;
}

export function isoFromMicros(us: bigint): string {
  const ms = Number(us / 1000n);
  const micro = Number(us % 1000n);
  return new Date(ms).toISOString().replace('Z', `${String(micro).padStart(3, '0')}Z`);
}

export const nowIso = (): string => isoFromMicros(nowMicros());

/**
 * Waits `ms`, or less: `hold` receives a function that ends the wait early (a loop keeps it to be woken
 * on new work or on stop), and `null` once the wait is over.
 */
export function sleepUnlessWoken(ms: number, hold: (wake: (() => void) | null) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      hold(null);
      resolve();
    }
    hold(done);
  });
}
