// `mintworks ready`: the process looks at its own /health until it answers ready, four times a second
// while a start normally completes and every 5 s after, so a process left not ready (an account to fund)
// does not ask its chain and database four times a second for as long as it waits.
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { readyPollDelay, readyWhenHealthy } from '../../src/boot/ready-watch.js';
import { Shutdown } from '../../src/boot/shutdown.js';

/** Lets the health answer's promise callbacks run (the next look is scheduled from them). */
const settle = () => new Promise<void>((r) => setImmediate(r));

/** Moves the mocked clock on by `ms`, a look's worth of time at a step, settling after each. */
async function advance(ms: number, step = 50): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    mock.timers.tick(step);
    await settle();
  }
}

describe('the readiness watch', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'] }));
  afterEach(() => mock.timers.reset());

  it('waits 250 ms between looks for the first 30 s, then 5 s', () => {
    assert.equal(readyPollDelay(0), 250);
    assert.equal(readyPollDelay(29_999), 250);
    assert.equal(readyPollDelay(30_000), 5_000);
    assert.equal(readyPollDelay(3_600_000), 5_000);
  });

  it('a process left not ready is looked at 4 times a second, then once every 5 s; one look at a time', async () => {
    let looks = 0;
    let inFlight = 0;
    let most = 0;
    const health = async () => {
      looks++;
      most = Math.max(most, ++inFlight);
      await settle();
      inFlight--;
      return { ready: false };
    };
    const said: unknown[] = [];
    const shutdown = new Shutdown(pino({ level: 'silent' }));
    readyWhenHealthy(shutdown, health, (h) => said.push(h));
    assert.deepEqual(said, [null], 'listening is said at once');
    await advance(30_000);
    assert.ok(looks >= 110 && looks <= 120, `${looks} looks in the first 30 s`);
    const fast = looks;
    await advance(60_000, 250);
    assert.ok(looks - fast >= 11 && looks - fast <= 13, `${looks - fast} looks in the next 60 s`);
    assert.equal(most, 1);
    await shutdown.run();
    const stopped = looks;
    await advance(20_000, 250);
    assert.equal(looks, stopped, 'no look after the stop');
    assert.deepEqual(said, [null], 'never ready, never said');
  });

  it('says ready once, from its own look or from a /health answer, and looks no more', async () => {
    let ready = false;
    let looks = 0;
    const said: unknown[] = [];
    const shutdown = new Shutdown(pino({ level: 'silent' }));
    const seen = readyWhenHealthy(
      shutdown,
      async () => {
        looks++;
        const h = { ready };
        seen(h); // /health gives every answer to the watch
        return h;
      },
      (h) => said.push(h),
    );
    await advance(1_000);
    assert.ok(looks >= 3);
    ready = true;
    await advance(250);
    assert.deepEqual(said, [null, { ready: true }]);
    const after = looks;
    await advance(10_000);
    assert.equal(looks, after, 'no look once ready');
    seen({ ready: true }); // a probe from outside, later
    assert.equal(said.length, 2, 'said once');
    await shutdown.run();
  });
});
