// The chain tracker's loop (src/chain/sender.ts): news that comes while a pass runs (a broadcast of the
// mint worker) makes the next pass start at once, instead of after the poll's sleep; news while it sleeps
// ends the sleep. A lost wake-up here once cost every mint batch up to a poll interval. The loop runs
// for real; its pass, the reconciliation and the node are stand-ins, and the test watches when the loop
// goes to sleep.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { PublicClient } from 'viem';
import { ChainSender } from '../../src/chain/sender.js';
import type { Db } from '../../src/store/db.js';
import type { KeyRing } from '../../src/chain/keys.js';

/** A tracker whose passes run `onPass`; `sleeps` lists after which pass the loop went to sleep. */
function tracker(onPass: (pass: number, news: () => void) => void) {
  const node = { getBlock: async () => ({ baseFeePerGas: 1n, gasLimit: 30_000_000n }) } as unknown as PublicClient;
  const sender = new ChainSender({} as Db, node, {} as KeyRing, 31337, pino({ level: 'silent' }), {
    relayerCount: 0,
    embedded: true,
    confirmations: 0,
    flush: async () => {},
  });
  const news = () => (sender as unknown as { poke(): void }).poke(); // what a broadcast does
  let passes = 0;
  const sleeps: number[] = [];
  let sleeping: (() => void) | null = null;
  const asleep: (() => void)[] = [];
  // The loop hands its wake-up to `wake` when it goes to sleep, and clears it when it wakes.
  Object.defineProperty(sender, 'wake', {
    get: () => sleeping,
    set: (w: (() => void) | null) => {
      sleeping = w;
      if (w) {
        sleeps.push(passes);
        asleep.splice(0).forEach((r) => r());
      }
    },
  });
  Object.assign(sender, { reconcile: async () => {} });
  sender.trackOnce = async () => {
    passes++;
    onPass(passes, news);
  };
  return {
    sender,
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
