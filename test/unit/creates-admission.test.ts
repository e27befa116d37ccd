// Back-pressure of creates (src/services/assets/admission.ts): refused by the bytes held, not their
// count, and while the process's memory is over its limit; what is refused holds nothing.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CreatesAdmission, RETRY_AFTER_S } from '../../src/services/assets/admission.js';

describe('CreatesAdmission', () => {
  const admissions: CreatesAdmission[] = [];
  const make = (limits: { queueBytes: number; memoryBytes: number }, rss = () => 0) => {
    const a = new CreatesAdmission(limits, rss);
    admissions.push(a);
    return a;
  };
  after(() => admissions.forEach((a) => a.stop()));

  it('holds creates until their bytes would pass the bound, whatever their count', () => {
    const a = make({ queueBytes: 1000, memoryBytes: 0 });
    for (let i = 0; i < 10; i++) assert.equal(a.admit(100), null);
    assert.deepEqual(a.admit(1), { reason: 'queue', retryAfterS: RETRY_AFTER_S.queue });
    assert.deepEqual(a.snapshot(), { creates: 10, bytes: 1000, rssBytes: 0 });
    a.release(100);
    assert.equal(a.admit(50), null);
    assert.equal(a.admit(50), null);
    assert.notEqual(a.admit(50), null);
    assert.deepEqual(a.refused, { queue: 2, memory: 0 });
  });

  it('lets the first create in however large it is, so that any body the HTTP limit takes can be answered', () => {
    const a = make({ queueBytes: 1000, memoryBytes: 0 });
    assert.equal(a.admit(5000), null);
    assert.notEqual(a.admit(1), null);
    a.release(5000);
    assert.deepEqual(a.snapshot(), { creates: 0, bytes: 0, rssBytes: 0 });
    assert.equal(a.admit(1), null);
  });

  it('refuses every create while the resident memory is over the limit, and admits again once it is back under', () => {
    let rss = 900;
    const a = make({ queueBytes: 0, memoryBytes: 1000 }, () => rss);
    assert.equal(a.admit(10), null);
    rss = 1200;
    assert.equal(a.admit(10), null, 'read off the request path: the refusals start with the next sample');
    a.sample();
    assert.deepEqual(a.admit(10), { reason: 'memory', retryAfterS: RETRY_AFTER_S.memory });
    assert.deepEqual(a.admit(10), { reason: 'memory', retryAfterS: RETRY_AFTER_S.memory });
    rss = 800;
    a.sample();
    assert.equal(a.admit(10), null);
    assert.equal(a.refused.memory, 2);
  });

  it('bounds nothing when both limits are 0', () => {
    const a = make({ queueBytes: 0, memoryBytes: 0 }, () => Number.MAX_SAFE_INTEGER);
    for (let i = 0; i < 1000; i++) assert.equal(a.admit(1 << 20), null);
  });
});
