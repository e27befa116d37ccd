// Bringing a chain up at the start (src/boot/chains.ts bringUp), with a stand-in for the chain's runtime:
// the embedded chain not answering (killed, its supervisor restarting it, while the workers' thread
// starts) is waited for until the deadline; another chain's outage and a node of another chain are
// the caller's to judge, at once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bringUp } from '../../src/boot/chains.js';
import { WrongChainError } from '../../src/chain/chain-client.js';

/** A runtime whose steps throw `failures` times, then report ready. */
function runtime(embedded: boolean, failures: number, err: () => Error = () => new Error('fetch failed')) {
  let steps = 0;
  return {
    get steps() {
      return steps;
    },
    spec: { embedded } as never,
    waitingFor: null,
    forwarderAddress: '0x0000000000000000000000000000000000000001' as const,
    async step() {
      steps++;
      if (steps <= failures) throw err();
      return true;
    },
  };
}

describe('bringing a chain up at the start', () => {
  it('waits for the embedded chain while it does not answer', async () => {
    const rt = runtime(true, 3);
    await bringUp(rt, 10_000);
    assert.equal(rt.steps, 4);
  });

  it('gives up on the embedded chain at the deadline', async () => {
    const rt = runtime(true, Number.POSITIVE_INFINITY);
    await assert.rejects(bringUp(rt, 300), /fetch failed/);
    assert.ok(rt.steps > 1);
  });

  it("leaves another chain's outage to the caller, and refuses a node of another chain at once", async () => {
    await assert.rejects(bringUp(runtime(false, 1), 10_000), /fetch failed/);
    const wrong = runtime(true, 1, () => new WrongChainError('another chain'));
    await assert.rejects(bringUp(wrong, 10_000), WrongChainError);
    assert.equal(wrong.steps, 1);
  });
});
