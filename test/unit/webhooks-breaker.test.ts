import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EndpointBreakers, FAILURES_TO_OPEN } from '../../src/webhooks/breaker.js';

describe('endpoint breaker', () => {
  it('opens after consecutive failures, probes with one request after the cool-down, closes on success', () => {
    const b = new EndpointBreakers();
    for (let i = 0; i < FAILURES_TO_OPEN - 1; i++) b.record('a', false, 1000);
    assert.equal(b.allowance('a', 1000, 4), 4, 'still closed');
    b.record('a', false, 1000);
    assert.equal(b.allowance('a', 1000, 4), 0, 'open');
    assert.deepEqual(b.tripped(), ['a']);
    assert.equal(b.allowance('b', 1000, 4), 4, 'other endpoints unaffected');
    assert.equal(b.allowance('a', 1000 + 5000, 4), 1, 'probing after 5 s');
    b.record('a', false, 6000);
    assert.equal(b.allowance('a', 6000 + 9999, 4), 0, 'a failed probe opens it for twice as long');
    assert.equal(b.allowance('a', 6000 + 10_000, 4), 1);
    b.record('a', true, 16_000);
    assert.equal(b.allowance('a', 16_000, 4), 4, 'closed again');
    assert.deepEqual(b.tripped(), []);
  });

  it('a success in between resets the count; the cool-down is capped at 5 minutes', () => {
    const b = new EndpointBreakers();
    for (let i = 0; i < FAILURES_TO_OPEN - 1; i++) b.record('a', false, 0);
    b.record('a', true, 0);
    b.record('a', false, 0);
    assert.equal(b.allowance('a', 0, 4), 4);
    for (let i = 0; i < 30; i++) b.record('a', false, 0);
    assert.equal(b.allowance('a', 5 * 60_000 - 1, 4), 0);
    assert.equal(b.allowance('a', 5 * 60_000, 4), 1);
  });
});
