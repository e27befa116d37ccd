// The pure rules of a relayer rotation: which indices new relayers take, and where one change of a
// contract's operators stands from what was recorded and what the contract says.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { nextRelayerIndices, pairState } from '../../src/domain/relayer-rotation.js';

describe('next relayer indices', () => {
  it('follow every index used on any chain and every HSM label', () => {
    assert.deepEqual(nextRelayerIndices([0, 1], [], 2), [2, 3]);
    assert.deepEqual(nextRelayerIndices([0, 1, 5], [], 1), [6]);
    // A key generated for index 7 (its rotation's database transaction never committed) is not reused.
    assert.deepEqual(nextRelayerIndices([0, 1], ['mintworks:ab12:relayer:7', 'mintworks:ab12:deployer'], 2), [8, 9]);
    assert.deepEqual(nextRelayerIndices([], [], 3), [0, 1, 2]);
  });
  it('refuse a count under one', () => {
    assert.throws(() => nextRelayerIndices([0], [], 0), /at least one/);
    assert.throws(() => nextRelayerIndices([0], [], 1.5), /at least one/);
  });
});

describe('where a change stands', () => {
  it('waits while a recorded transaction is not final', () => {
    assert.equal(pairState([{ final: false, ok: false }], null), 'waiting');
    assert.equal(
      pairState(
        [
          { final: true, ok: false },
          { final: false, ok: false },
        ],
        true,
      ),
      'waiting',
    );
  });
  it('is done once one is final and mined, or when the contract already says so', () => {
    assert.equal(pairState([{ final: true, ok: true }], null), 'done');
    assert.equal(pairState([], true), 'done');
    assert.equal(pairState([{ final: true, ok: false }], true), 'done');
  });
  it('is sent (again) when nothing settles it, up to three times', () => {
    assert.equal(pairState([], null), 'to_send');
    assert.equal(pairState([], false), 'to_send');
    assert.equal(pairState([{ final: true, ok: false }], false), 'to_send');
    assert.equal(
      pairState(
        [1, 2, 3].map(() => ({ final: true, ok: false })),
        false,
      ),
      'failed',
    );
  });
});
