// A chain's monitor reads the chain at every pass (1 s) while it is not ready for a reason that arose
// within the last minute, and every 5 s otherwise: a process left waiting for an account nobody funds
// does not ask a provider for every balance each second for as long as it waits.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MONITOR_PASS_MS, monitorStepEveryMs, NotReadyClock } from '../../src/chain/monitor-pace.js';

/**
 * The monitor's passes over `ms`, as ChainRuntime.monitorPass makes them: a read when due by
 * the rule, the verdict of each read from `verdictAt`. Returns the times of the reads.
 */
function reads(clock: NotReadyClock, ms: number, verdictAt: (t: number) => { ready: boolean; reason: string | null }): number[] {
  const at: number[] = [];
  let steppedAt = -Infinity;
  let verdict = { ready: false, reason: 'starting' as string | null };
  for (let t = 0; t < ms; t += MONITOR_PASS_MS) {
    if (t - steppedAt >= monitorStepEveryMs(verdict.ready, clock.forMs(t))) {
      steppedAt = t;
      verdict = verdictAt(t);
      clock.note(verdict.ready, verdict.reason, t);
      at.push(t);
    }
  }
  return at;
}

describe("the chain monitor's pace", () => {
  it('a ready chain every 5 s; not ready, every pass for a minute of the same reason, then every 5 s', () => {
    assert.equal(monitorStepEveryMs(true, 0), 5000);
    assert.equal(monitorStepEveryMs(false, 0), 0);
    assert.equal(monitorStepEveryMs(false, 59_999), 0);
    assert.equal(monitorStepEveryMs(false, 60_000), 5000);
  });

  it('an account nobody funds: 10 minutes make 168 reads, not 600', () => {
    const unfunded = () => ({ ready: false, reason: 'fund the deployer 0xabc (it deploys the forwarder)' });
    const at = reads(new NotReadyClock(), 600_000, unfunded);
    // 60 in the first minute (one a second), then one every 5 s for nine minutes.
    assert.equal(at.filter((t) => t < 60_000).length, 60);
    assert.equal(at.length, 60 + 108);
    assert.ok(at.slice(61).every((t, i) => t - at[60 + i] === 5000));
  });

  it('a new reason starts the fast minute again: funding shows within a second while someone is at it', () => {
    // The deployer funded after 5 minutes: its forwarder is deployed, then the relayers are to be funded.
    const verdictAt = (t: number) =>
      t < 300_000 ? { ready: false, reason: 'fund the deployer 0xabc (it deploys the forwarder)' } : { ready: false, reason: 'fund the relayers 0xdef, 0x123' };
    const at = reads(new NotReadyClock(), 420_000, verdictAt);
    const first = at.find((t) => t >= 300_000)!;
    assert.ok(first - 300_000 < 5000, 'the funding was seen at the slow pace at worst');
    const fastAfter = at.filter((t) => t > first && t < first + 60_000);
    assert.equal(fastAfter.length, 59, 'one read a second for a minute after the reason changed');
    assert.ok(at.filter((t) => t >= first + 61_000).every((t, i, a) => i === 0 || t - a[i - 1] === 5000));
  });

  it('ready again and then not ready: the minute starts again', () => {
    const clock = new NotReadyClock();
    clock.note(false, 'chain unreachable', 0);
    assert.equal(clock.forMs(120_000), 120_000);
    clock.note(true, null, 120_000);
    assert.equal(clock.forMs(130_000), 0);
    clock.note(false, 'chain unreachable', 130_000);
    assert.equal(clock.forMs(131_000), 1000);
    // The same reason noted again does not restart it.
    clock.note(false, 'chain unreachable', 140_000);
    assert.equal(clock.forMs(141_000), 11_000);
  });
});
