// How often a chain's monitor reads the chain again (its accounts' balances, the forwarder's code, the
// head): the rule apart from the loop that follows it.

/** The monitor's pass: stuck transactions of a ready chain are looked at this often. */
export const MONITOR_PASS_MS = 1000;
/** A ready chain is read again this often (an account may run dry). */
const READY_STEP_MS = 5000;
/** A chain not ready for the same reason this long is read at the ready pace. */
const FAST_FOR_MS = 60_000;

/**
 * How long after the last read the monitor reads the chain again. Not ready, it reads at every pass
 * for a minute after the reason last changed: funding an account or a node coming back shows within a
 * second while someone is at it. After that, at the ready pace: a process left waiting (an account
 * nobody funds, a node that stays down) would otherwise ask for every account's balance each second
 * (about ten JSON-RPC calls with two relayers), to a provider that may bill each one, for as long as
 * it waits. A new reason (the deployer funded, now the relayers to fund) starts the minute again.
 */
export function monitorStepEveryMs(ready: boolean, sameReasonForMs: number): number {
  if (ready) return READY_STEP_MS;
  return sameReasonForMs < FAST_FOR_MS ? 0 : READY_STEP_MS;
}

/** Since when the chain has been not ready for its present reason. */
export class NotReadyClock {
  private reason: string | null = null;
  private since = 0;

  /** The verdict just judged: a reason other than the last one (or a return from ready) starts the clock. */
  note(ready: boolean, reason: string | null, now = Date.now()): void {
    const r = ready ? null : (reason ?? 'not ready');
    if (r !== null && r !== this.reason) this.since = now;
    this.reason = r;
  }

  /** How long the present reason has stood (0 while ready). */
  forMs(now = Date.now()): number {
    return this.reason === null ? 0 : now - this.since;
  }
}
