// `mintworks ready` is said when /health first answers ready: until then the process looks at its own
// health, often while a start normally completes and seldom after.
import type { Shutdown } from './shutdown.js';

const FAST_MS = 250;
const FAST_FOR_MS = 30_000;
const SLOW_MS = 5_000;

/**
 * How long after a look at /health the next one comes, `elapsedMs` after the watch began. A full /health
 * asks every chain (its latest block, the accounts' balances) and the database: a process that stays
 * not ready (an account to fund, a chain unreachable) would otherwise ask four times a second, to a
 * provider that may bill each call, for as long as it waits.
 */
export function readyPollDelay(elapsedMs: number): number {
  return elapsedMs < FAST_FOR_MS ? FAST_MS : SLOW_MS;
}

/**
 * An API process says `mintworks listening` once the port is bound and start-up is over (`say(null)`,
 * at once), and `mintworks ready` the first time /health answers 200 (`say(h)`, once), whether a client
 * asked it (said before that answer goes out) or the process's own look saw it (a chain to deploy or to
 * fund first delays it, not the port). Returns what every /health answer is given to. One look at a
 * time: a slow /health (a chain timing out) is not asked again before it answers.
 */
export function readyWhenHealthy(
  shutdown: Shutdown,
  health: () => Promise<unknown>,
  say: (h: { ready: boolean } | null) => void,
): (h: { ready: boolean }) => void {
  let said = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const since = Date.now();
  say(null);
  const look = () => {
    timer = setTimeout(
      () =>
        void health()
          .catch(() => {})
          .finally(() => {
            if (!said && !stopped) look();
          }),
      readyPollDelay(Date.now() - since),
    );
    timer.unref();
  };
  look();
  shutdown.add(async () => {
    stopped = true;
    clearTimeout(timer);
  });
  return (h) => {
    if (said || !h.ready) return;
    said = true;
    clearTimeout(timer);
    say(h);
  };
}
