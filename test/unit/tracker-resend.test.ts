// When the chain tracker sends a transaction of its own accord (src/chain/tracker.ts, sendDue): a row it
// read as signed before a broadcast of this process gave it to the node is not sent a second time.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sendDue } from '../../src/chain/tracker.js';

describe('the tracker sends again', () => {
  const now = 1_000_000;
  const sentAt = new Map([
    [1, now - 200], // given to the node a moment ago
    [2, now - 11_000], // long ago, and still without a receipt
  ]);

  it('a signed transaction that no broadcast gave the node (recorded by a process that stopped before sending)', () => {
    assert.equal(sendDue({ id: 3, status: 'signed' }, sentAt, now), true);
  });

  it('not a transaction read as signed that a broadcast has given the node since the read', () => {
    assert.equal(sendDue({ id: 1, status: 'signed' }, sentAt, now), false);
    assert.equal(sendDue({ id: 1, status: 'sent' }, sentAt, now), false);
  });

  it('a sent transaction the node has had long without mining it', () => {
    assert.equal(sendDue({ id: 2, status: 'sent' }, sentAt, now), true);
    assert.equal(sendDue({ id: 2, status: 'signed' }, sentAt, now), true);
  });

  it('never a mined or reverted one', () => {
    assert.equal(sendDue({ id: 4, status: 'mined' }, sentAt, now), false);
    assert.equal(sendDue({ id: 4, status: 'reverted' }, sentAt, now), false);
  });
});
