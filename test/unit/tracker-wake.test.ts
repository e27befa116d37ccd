// The chain tracker's loop (src/chain/loop.ts, run by src/chain/runtime.ts): news that comes while a pass runs (a broadcast of the
// mint worker) makes the next pass start at once, instead of after the poll's sleep; news while it sleeps
// ends the sleep. A lost wake-up here once cost every mint batch up to a poll interval. The loop runs
// for real; its pass is a stand-in, and the test watches when the loop
// goes to sleep.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WakeableLoop } from '../../src/chain/loop.js';

/** A loop whose passes run `onPass`; `sleeps` lists after which pass the loop went to sleep. */
function tracker(onPass: (pass: number, news: () => void) => void) {
  let passes = 0;
  const sleeps: number[] = [];
  let sleeping: (() => void) | null = null;
  const asleep: (() => void)[] = [];
  const loop = new WakeableLoop({
    pass: async () => {
      passes++;
      onPass(passes, news);
    },
    idleMs: 250,
    onError: (err) => {
      throw err;
    },
  });
  const news = () => loop.poke(); // what a broadcast does
  // The loop hands its wake-up to `wake` when it goes to sleep, and clears it when it wakes.
  Object.defineProperty(loop, 'wake', {
    get: () => sleeping,
    set: (w: (() => void) | null) => {
      sleeping = w;
      if (w) {
        sleeps.push(passes);
        asleep.splice(0).forEach((r) => r());
      }
    },
  });
  return {
    sender: loop,
    sleeps,
    news,
    isSleeping: () => sleeping !== null,
    /** Resolves once the loop is asleep. */
    untilAsleep: () => new Promise<void>((r) => (sleeping ? r() : asleep.push(r))),
  };
}

describe('chain tracker wake-ups', () => {
  it('news during a pass: the next pass starts without sleeping', async () => {
    let sleptBeforeSecond: number[] | null = null;
    let second!: () => void;
    const reachedSecond = new Promise<void>((r) => (second = r));
    const t = tracker((pass, news) => {
      if (pass === 1) news();
      if (pass === 2) {
        sleptBeforeSecond = [...t.sleeps];
        second();
      }
    });
    t.sender.start();
    try {
      await reachedSecond;
    } finally {
      await t.sender.stop(); // also when an assertion fails: the loop must not outlive the test
    }
    assert.deepEqual(sleptBeforeSecond, [], 'the loop slept between the pass that got the news and the next');
  });

  it('no news: the loop sleeps after a pass, and news ends the sleep at once', async () => {
    let second!: () => void;
    const reachedSecond = new Promise<void>((r) => (second = r));
    let sleptBeforeSecond: number[] | null = null;
    const t = tracker((pass) => {
      if (pass === 2) {
        sleptBeforeSecond = [...t.sleeps];
        second();
      }
    });
    t.sender.start();
    try {
      await t.untilAsleep();
      t.news();
      assert.equal(t.isSleeping(), false, 'the news did not end the sleep');
      await reachedSecond;
    } finally {
      await t.sender.stop();
    }
    assert.deepEqual(sleptBeforeSecond, [1]);
  });
});
