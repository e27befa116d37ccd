// The creates' thread's answers leave durable: the WAL is flushed before each message, once for the
// answers settled together, and answers whose flush failed are refused, never answered as created.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CreatesOutbox } from '../../src/boot/threads/creates-outbox.js';
import { fromWireError, type FromCreates } from '../../src/boot/threads/creates-thread.js';
import { fromDatabase } from '../../src/store/unavailable.js';
import type { ApiError } from '../../src/util/errors.js';

type Sent = Extract<FromCreates, { answers: unknown }>;
const microtasks = () => new Promise<void>((r) => setImmediate(r));

describe("the creates' thread's outbox", () => {
  it('flushes once, then sends the answers settled together in one message', async () => {
    const steps: string[] = [];
    const sent: Sent[] = [];
    const outbox = new CreatesOutbox(
      () => steps.push('flush'),
      (m) => {
        steps.push('send');
        sent.push(m as Sent);
      },
    );
    outbox.answer({ id: 1, uid: '111111111111' });
    outbox.answer({ id: 2, error: { status: 404, type: 'client_error', details: [] } });
    outbox.announceKinds(['mint']);
    assert.deepEqual(steps, [], 'nothing leaves before the group is settled');
    await microtasks();
    assert.deepEqual(steps, ['flush', 'send']);
    assert.deepEqual(
      sent[0].answers.map((a) => a.id),
      [1, 2],
    );
    assert.deepEqual(sent[0].announce, ['mint']);
    assert.ok(sent[0].flushedMs >= 0);
    outbox.answer({ id: 3, uid: '222222222222' });
    await microtasks();
    assert.deepEqual(steps, ['flush', 'send', 'flush', 'send'], 'the next group is flushed again');
    assert.deepEqual(sent[1].announce, [], 'kinds are announced once');
  });

  it('answers whose flush failed are refused with its error, not answered as created', async () => {
    const sent: Sent[] = [];
    const outbox = new CreatesOutbox(
      () => {
        throw fromDatabase(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
      },
      (m) => sent.push(m as Sent),
    );
    outbox.answer({ id: 7, uid: '333333333333' });
    outbox.answer({ id: 8, uid: '444444444444' });
    outbox.announceKinds(['mint']);
    await microtasks();
    assert.equal(sent.length, 1);
    assert.deepEqual(
      sent[0].answers.map((a) => a.id),
      [7, 8],
    );
    for (const a of sent[0].answers) {
      assert.ok('error' in a && !('uid' in a), 'no uid crosses');
      // A failing disk is the database unavailable: a 503 with Retry-After, as the main thread's own flush answered.
      assert.equal((fromWireError(a.error) as ApiError).status, 503);
    }
    assert.deepEqual(sent[0].announce, ['mint'], 'the committed jobs still wake the workers');
  });

  it('announcing alone does not flush', async () => {
    let flushes = 0;
    const sent: Sent[] = [];
    const outbox = new CreatesOutbox(
      () => flushes++,
      (m) => sent.push(m as Sent),
    );
    outbox.announceKinds(['prepare']);
    await microtasks();
    assert.equal(flushes, 0);
    assert.deepEqual(sent[0].answers, []);
    outbox.sendNow();
    assert.equal(sent.length, 1, 'nothing waiting: nothing sent');
  });
});
